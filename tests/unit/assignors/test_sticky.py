"""What both sticky assignors promise: valid, balanced, sticky."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroups.assignors import Assignment, Subscription, TopicPartition, by_name

from .invariants import (
    assignable,
    check_as_balanced_as_possible,
    check_evenly_balanced,
    check_valid,
    counts,
    moved,
)
from .rounds import STICKY_ASSIGNORS, reporting
from .strategies import Group, groups


def named(assignments: dict[str, Assignment]) -> dict[str, list[str]]:
    return {m: [f"{t}p{p}" for t, p in a.partitions] for m, a in assignments.items()}


def test_javadoc_example_1_keeps_everything_when_a_member_leaves() -> None:
    """The Java StickyAssignor javadoc: four topics of two partitions, three
    members; C1 leaves and C0 and C2 keep what they had."""
    topics = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    group = {m: Subscription(list(topics)) for m in ("C0", "C1", "C2")}
    first = by_name("sticky").assign(topics, group)
    assert named(first) == {
        "C0": ["t0p0", "t1p1", "t3p0"],
        "C1": ["t0p1", "t2p0", "t3p1"],
        "C2": ["t1p0", "t2p1"],
    }
    del group["C1"]
    second = by_name("sticky").assign(topics, reporting("sticky", group, first, 1))
    assert set(first["C0"].partitions) <= set(second["C0"].partitions)
    assert set(first["C2"].partitions) <= set(second["C2"].partitions)
    check_evenly_balanced(second)


def test_javadoc_example_2_balances_what_roundrobin_cannot() -> None:
    topics = {"t0": 1, "t1": 2, "t2": 3}
    group = {
        "C0": Subscription(["t0"]),
        "C1": Subscription(["t0", "t1"]),
        "C2": Subscription(["t0", "t1", "t2"]),
    }
    first = by_name("sticky").assign(topics, group)
    assert named(first) == {"C0": ["t0p0"], "C1": ["t1p0", "t1p1"], "C2": ["t2p0", "t2p1", "t2p2"]}
    del group["C0"]
    second = by_name("sticky").assign(topics, reporting("sticky", group, first, 1))
    assert named(second) == {"C1": ["t0p0", "t1p0", "t1p1"], "C2": ["t2p0", "t2p1", "t2p2"]}


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=80, deadline=None)
@given(group=groups())
def test_first_assignment_is_valid_and_as_balanced_as_possible(name: str, group: Group) -> None:
    result = by_name(name).assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result)
    check_as_balanced_as_possible(group.subscriptions, result)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=60, deadline=None)
@given(group=groups(identical=True))
def test_identical_subscriptions_differ_by_at_most_one(name: str, group: Group) -> None:
    result = by_name(name).assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result)
    check_evenly_balanced(result)


@st.composite
def claims(draw: st.DrawFn, group: Group) -> dict[str, tuple[list[TopicPartition], int]]:
    """What each member says it owned, and in which generation: random, so
    members may claim the same partitions, partitions of topics they do not
    subscribe to, or partitions that no longer exist."""
    known = sorted(assignable(group.partitions_per_topic, group.subscriptions))
    known += [TopicPartition("gone", 0), TopicPartition("t0", 99)]
    return {
        member_id: (
            draw(st.lists(st.sampled_from(known), unique=True, max_size=8)),
            draw(st.integers(-1, 3)),
        )
        for member_id in group.subscriptions
    }


def claiming(
    name: str, group: Group, claimed: dict[str, tuple[list[TopicPartition], int]]
) -> dict[str, Subscription]:
    subscriptions = {}
    for member_id, (owned, generation) in claimed.items():
        previous = {member_id: Assignment(owned)}
        s = {member_id: group.subscriptions[member_id]}
        subscriptions |= reporting(name, s, previous, generation)
    return subscriptions


def winning_claims(
    group: Group, claimed: dict[str, tuple[list[TopicPartition], int]]
) -> dict[str, set[TopicPartition]]:
    """Each member's claims that its generation makes good: the newest
    generation claiming a partition wins, a tie leaves it to nobody; and only
    partitions that exist of topics the member subscribes to."""
    valid = assignable(group.partitions_per_topic, group.subscriptions)
    newest: dict[TopicPartition, list[tuple[int, str]]] = {}
    for member_id, (owned, generation) in claimed.items():
        for tp in owned:
            newest.setdefault(tp, []).append((generation, member_id))
    won: dict[str, set[TopicPartition]] = {m: set() for m in claimed}
    for tp, claimants in newest.items():
        top = max(g for g, _ in claimants)
        at_top = [m for g, m in claimants if g == top]
        member_id = at_top[0]
        if len(at_top) == 1 and tp in valid and tp.topic in group.subscriptions[member_id].topics:
            won[member_id].add(tp)
    return won


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=80, deadline=None)
@given(data=st.data(), group=groups())
def test_after_any_past_the_result_is_valid_and_balanced(
    name: str, data: st.DataObject, group: Group
) -> None:
    claimed = data.draw(claims(group))
    result = by_name(name).assign(group.partitions_per_topic, claiming(name, group, claimed))
    # The cooperative assignor may hold some partitions back for a round.
    check_valid(group.partitions_per_topic, group.subscriptions, result, complete=name == "sticky")
    if name == "sticky":
        check_as_balanced_as_possible(group.subscriptions, result)
        if len({frozenset(s.topics) for s in group.subscriptions.values()}) == 1:
            check_evenly_balanced(result)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=80, deadline=None)
@given(data=st.data(), group=groups(identical=True))
def test_members_keep_what_they_won_up_to_their_share(
    name: str, data: st.DataObject, group: Group
) -> None:
    """With identical subscriptions each member keeps at least
    min(what it rightfully owned, floor(N/M)) of it."""
    claimed = data.draw(claims(group))
    result = by_name(name).assign(group.partitions_per_topic, claiming(name, group, claimed))
    share = len(assignable(group.partitions_per_topic, group.subscriptions)) // len(claimed)
    for member_id, won in winning_claims(group, claimed).items():
        kept = won & set(result[member_id].partitions)
        assert len(kept) >= min(len(won), share), (member_id, won, result[member_id])


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=60, deadline=None)
@given(group=groups())
def test_nothing_moves_when_nothing_changed(name: str, group: Group) -> None:
    assignor = by_name(name)
    first = assignor.assign(group.partitions_per_topic, group.subscriptions)
    again = assignor.assign(
        group.partitions_per_topic, reporting(name, group.subscriptions, first, 1)
    )
    assert {m: set(a.partitions) for m, a in again.items()} == {
        m: set(a.partitions) for m, a in first.items()
    }


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), group=groups(identical=True, max_partitions=30))
def test_when_a_member_leaves_only_its_partitions_move(
    name: str, data: st.DataObject, group: Group
) -> None:
    assignor = by_name(name)
    first = assignor.assign(group.partitions_per_topic, group.subscriptions)
    leaving = data.draw(st.sampled_from(sorted(group.subscriptions)))
    remaining = {m: s for m, s in group.subscriptions.items() if m != leaving}
    second = assignor.assign(group.partitions_per_topic, reporting(name, remaining, first, 1))
    for member_id in remaining:
        assert set(first[member_id].partitions) <= set(second[member_id].partitions)
    if remaining:
        check_evenly_balanced(second)
        check_valid(group.partitions_per_topic, remaining, second)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=50, deadline=None)
@given(group=groups(identical=True, max_partitions=20))
def test_when_a_member_joins_only_the_excess_moves(name: str, group: Group) -> None:
    """With identical subscriptions a member only loses partitions beyond its
    new share, and loses none if it keeps its count. (With different
    subscriptions a chain of moves may be the only way to make room, so a
    member can give one partition and take another.)"""
    assignor = by_name(name)
    first = assignor.assign(group.partitions_per_topic, group.subscriptions)
    topics = list(next(iter(group.subscriptions.values())).topics)
    joined = reporting(name, group.subscriptions, first, 1) | {"~new": Subscription(topics)}
    second = assignor.assign(group.partitions_per_topic, joined)
    for member_id, before in first.items():
        after = set(second[member_id].partitions)
        assert set(before.partitions) >= after
        lost = set(before.partitions) - after
        if lost:
            assert len(before.partitions) > len(after)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
def test_the_newest_generation_wins_a_partition_both_claim(name: str) -> None:
    group = Group({"t": 4}, {"old": Subscription(["t"]), "new": Subscription(["t"])})
    tp = TopicPartition("t", 0)
    claimed = {"old": ([tp, TopicPartition("t", 1)], 2), "new": ([tp], 5)}
    result = by_name(name).assign({"t": 4}, claiming(name, group, claimed))
    assert tp in result["new"].partitions
    assert TopicPartition("t", 1) in result["old"].partitions


def test_a_partition_two_members_claim_in_one_generation_is_neither_ones() -> None:
    """Both claims are suspect: under the eager protocol it goes where balance
    puts it; under the cooperative one nobody gets it until both let go."""
    tp = TopicPartition("t", 0)
    group = Group({"t": 2}, {"a": Subscription(["t"]), "b": Subscription(["t"])})
    claimed = {"a": ([tp], 3), "b": ([tp], 3)}
    cooperative = by_name("cooperative-sticky").assign(
        {"t": 2}, claiming("cooperative-sticky", group, claimed)
    )
    assert all(tp not in a.partitions for a in cooperative.values())
    eager = by_name("sticky").assign({"t": 2}, claiming("sticky", group, claimed))
    check_valid({"t": 2}, group.subscriptions, eager)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=40, deadline=None)
@given(group=groups(racks=True, static_members=False))
def test_racks_keep_the_result_valid_and_balanced(name: str, group: Group) -> None:
    racks = {
        TopicPartition(t, p): {"abc"[p % 3]}
        for t, n in group.partitions_per_topic.items()
        for p in range(n)
    }
    result = by_name(name).assign(
        group.partitions_per_topic, group.subscriptions, partition_racks=racks
    )
    check_valid(group.partitions_per_topic, group.subscriptions, result)
    check_as_balanced_as_possible(group.subscriptions, result)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
def test_racks_are_matched_when_balance_allows(name: str) -> None:
    """Six partitions, two on each of three racks, one member per rack."""
    racks = {TopicPartition("t", p): {"abc"[p % 3]} for p in range(6)}
    members = {f"m{r}": Subscription(["t"], rack_id=r) for r in "abc"}
    result = by_name(name).assign({"t": 6}, members, partition_racks=racks)
    for member_id, assignment in result.items():
        assert all(racks[tp] == {member_id[1]} for tp in assignment.partitions)
    # And a member whose owned partitions are on another rack gives them up.
    wrong = Assignment([TopicPartition("t", 1), TopicPartition("t", 2)])
    previous = {"ma": wrong, "mb": result["mb"], "mc": result["mc"]}
    again = by_name(name).assign(
        {"t": 6}, reporting(name, members, previous, 1), partition_racks=racks
    )
    assert all(racks[tp] == {"a"} for tp in again["ma"].partitions)


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
def test_every_member_gets_an_entry(name: str) -> None:
    result = by_name(name).assign(
        {"t": 1}, {"a": Subscription(["t"]), "b": Subscription(["t"]), "c": Subscription([])}
    )
    assert sorted(result) == ["a", "b", "c"]
    assert sum(counts(result).values()) == 1
    assert by_name(name).assign({"t": 3}, {}) == {}


@pytest.mark.parametrize("name", STICKY_ASSIGNORS)
@settings(max_examples=40, deadline=None)
@given(group=groups(max_members=5))
def test_stickier_than_starting_over(name: str, group: Group) -> None:
    """A member change moves no more partitions than recomputing from scratch
    would, compared by what stays put."""
    assignor = by_name(name)
    first = assignor.assign(group.partitions_per_topic, group.subscriptions)
    grown = reporting(name, group.subscriptions, first, 1) | {"~x": Subscription(["t0", "t1"])}
    sticky = assignor.assign(group.partitions_per_topic, grown)
    fresh = assignor.assign(
        group.partitions_per_topic, {m: Subscription(list(s.topics)) for m, s in grown.items()}
    )
    assert len(moved(first, sticky)) <= len(moved(first, fresh))


def test_keeps_what_kafka_python_members_report() -> None:
    """A kafka-python member's JoinGroup metadata, bytes and all: the eager
    sticky assignor reads the previous assignment from its user data."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    from kgroups.assignors import decode_subscription, encode_subscription

    theirs = StickyPartitionAssignor()
    theirs.on_assignment(
        ConsumerProtocolAssignment(version=0, assigned_partitions=[("t", [0, 3])], user_data=b""),
        generation=4,
    )
    member = decode_subscription(theirs.metadata({"t"}).encode())
    ours = by_name("sticky")
    ours.on_assignment(Assignment([TopicPartition("t", 1), TopicPartition("t", 2)]), 4)
    other = decode_subscription(
        encode_subscription(Subscription(["t"], ours.subscription_user_data({"t"})))
    )
    result = by_name("sticky").assign(
        {"t": 6}, {"python": member, "kgroups": other, "new": Subscription(["t"])}
    )
    assert {TopicPartition("t", 0), TopicPartition("t", 3)} <= set(result["python"].partitions)
    assert {TopicPartition("t", 1), TopicPartition("t", 2)} <= set(result["kgroups"].partitions)
    assert len(result["new"].partitions) == 2
