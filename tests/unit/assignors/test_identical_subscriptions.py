"""The fast path for identical subscriptions deals whole rounds at once; it
must give exactly what dealing one partition at a time gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroups.assignors import Assignment, Subscription, TopicPartition, by_name
from kgroups.assignors.member_order import java_string_key

from .rounds import reporting


def one_at_a_time(
    partitions_per_topic: dict[str, int], owned: dict[str, list[TopicPartition]]
) -> dict[str, set[TopicPartition]]:
    """The constrained assignment step by step, as the Java client does it:
    keep owned partitions up to the quota, then deal the rest one by one to
    members below the minimum, then one each to members at the minimum."""
    topics = sorted((t for t, n in partitions_per_topic.items() if n > 0), key=java_string_key)
    everything = [TopicPartition(t, p) for t in topics for p in range(partitions_per_topic[t])]
    members = sorted(owned, key=java_string_key)
    min_quota, over_min_places = divmod(len(everything), len(members))
    max_quota = min_quota + (1 if over_min_places else 0)
    over_min = 0
    under_min: list[str] = []
    at_min: list[str] = []
    result: dict[str, list[TopicPartition]] = {}
    for member in members:
        mine = sorted(
            (tp for tp in owned[member] if tp in everything),
            key=lambda tp: (tp.partition, java_string_key(tp.topic)),
        )
        if len(mine) < min_quota:
            result[member] = mine
            under_min.append(member)
        elif len(mine) >= max_quota and over_min < over_min_places:
            result[member] = mine[:max_quota]
            over_min += 1
            if over_min == over_min_places:
                at_min.clear()
        else:
            result[member] = mine[:min_quota]
            if over_min < over_min_places:
                at_min.append(member)
    taken = {tp for tps in result.values() for tp in tps}
    turn = 0
    for tp in (tp for tp in everything if tp not in taken):
        if under_min:
            turn %= len(under_min)
            member = under_min[turn]
            result[member].append(tp)
            if len(result[member]) == min_quota:
                del under_min[turn]
                at_min.append(member)
            else:
                turn += 1
        else:
            member = at_min.pop(0)
            result[member].append(tp)
    return {m: set(tps) for m, tps in result.items()}


@st.composite
def pasts(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, list[TopicPartition]]]:
    """Partition counts, and what each member owned (no two the same)."""
    partitions_per_topic = {
        t: draw(st.integers(0, 15)) for t in draw(st.lists(st.sampled_from("abcd"), min_size=1))
    }
    members = draw(st.lists(st.text("xyz0", min_size=1, max_size=4), min_size=1, max_size=9))
    everything = [TopicPartition(t, p) for t, n in partitions_per_topic.items() for p in range(n)]
    owners = draw(
        st.lists(
            st.sampled_from([*members, None]), min_size=len(everything), max_size=len(everything)
        )
    )
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp, owner in zip(everything, owners, strict=True):
        if owner is not None:
            owned[owner].append(tp)
    return partitions_per_topic, owned


@settings(max_examples=150, deadline=None)
@given(pasts())
def test_same_as_dealing_one_partition_at_a_time(
    past: tuple[dict[str, int], dict[str, list[TopicPartition]]],
) -> None:
    partitions_per_topic, owned = past
    topics = list(partitions_per_topic)
    subscriptions = {m: Subscription(topics) for m in owned}
    previous = {m: Assignment(tps) for m, tps in owned.items()}
    result = by_name("sticky").assign(
        partitions_per_topic, reporting("sticky", subscriptions, previous, 1)
    )
    assert {m: set(a.partitions) for m, a in result.items()} == one_at_a_time(
        partitions_per_topic, owned
    )
