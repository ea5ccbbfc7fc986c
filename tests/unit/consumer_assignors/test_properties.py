"""Properties of the server-side assignors on random groups (hypothesis)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroups.coordinator.consumer_assignors import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    RangeAssignor,
    TopicMetadata,
    UniformAssignor,
)

from .groups import T1, T2, T3, T_HIGH, assert_valid, sizes

TOPIC_IDS = [T1, T2, T3, T_HIGH]
uniform = UniformAssignor()
Group = tuple[list[MemberSpec], dict[uuid.UUID, TopicMetadata]]
range_assignor = RangeAssignor()


@st.composite
def groups(draw: st.DrawFn, *, homogeneous: bool | None = None, current: bool = True) -> Group:
    """Members with any current assignment, even one that is stale, claims a
    partition twice or names partitions and topics that do not exist."""
    metadata = {
        t: TopicMetadata(draw(st.integers(0, 10)))
        for t in draw(st.lists(st.sampled_from(TOPIC_IDS), min_size=1, unique=True))
    }
    known = sorted(metadata)
    member_ids = draw(
        st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=7, unique=True)
    )
    shared = frozenset(draw(st.lists(st.sampled_from(known), unique=True)))
    members = []
    for member_id in member_ids:
        if homogeneous or (homogeneous is None and draw(st.booleans())):
            subscribed = shared
        else:
            subscribed = frozenset(draw(st.lists(st.sampled_from(known), unique=True)))
        assignment: dict[uuid.UUID, frozenset[int]] = {}
        if current:
            for topic_id in draw(st.lists(st.sampled_from(TOPIC_IDS), unique=True, max_size=3)):
                assignment[topic_id] = frozenset(draw(st.lists(st.integers(0, 11), max_size=6)))
        members.append(MemberSpec(member_id, subscribed, assignment))
    return members, metadata


def shuffled(members: list[MemberSpec], seed: int) -> list[MemberSpec]:
    """The same group built in another order: members, subscription sets and
    assignment mappings all rebuilt."""
    rng = random.Random(seed)
    copies = []
    for spec in members:
        topics = list(spec.subscribed_topic_ids)
        rng.shuffle(topics)
        items = list(spec.assignment.items())
        rng.shuffle(items)
        assignment = {t: frozenset(sorted(p, reverse=rng.random() < 0.5)) for t, p in items}
        copies.append(MemberSpec(spec.member_id, frozenset(topics), assignment))
    rng.shuffle(copies)
    return copies


def assert_no_improving_move(result: GroupAssignment, members: list[MemberSpec]) -> None:
    """No partition can move between two subscribers of its topic and make
    them differ less: the balance Kafka's builders reach."""
    counts = sizes(result)
    subscriptions = {m.member_id: m.subscribed_topic_ids for m in members}
    for giver, assignment in result.items():
        for topic_id, partitions in assignment.items():
            if not partitions:
                continue
            for taker, subscribed in subscriptions.items():
                if topic_id in subscribed:
                    assert counts[giver] - counts[taker] <= 1, (giver, taker, topic_id)


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_is_valid_and_balanced(
    group: Group,
) -> None:
    members, metadata = group
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    counts = sizes(result).values()
    assert max(counts) - min(counts) <= 1


@settings(max_examples=300, deadline=None)
@given(groups())
def test_uniform_is_valid_and_cannot_be_improved_by_one_move(
    group: Group,
) -> None:
    members, metadata = group
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    assert_no_improving_move(result, members)


@settings(max_examples=200, deadline=None)
@given(groups(), st.integers(0, 2**32))
def test_uniform_is_deterministic(group: Group, seed: int) -> None:
    members, metadata = group
    first = uniform.assign(GroupSpec(members), metadata)
    second = uniform.assign(GroupSpec(shuffled(members, seed)), metadata)
    assert first == second


@settings(max_examples=200, deadline=None)
@given(groups(), st.integers(0, 2**32))
def test_range_is_deterministic_and_valid(group: Group, seed: int) -> None:
    members, metadata = group
    first = range_assignor.assign(GroupSpec(members), metadata)
    assert_valid(first, members, metadata)
    assert first == range_assignor.assign(GroupSpec(shuffled(members, seed)), metadata)


@settings(max_examples=200, deadline=None)
@given(groups())
def test_range_gives_each_subscriber_a_contiguous_even_share(
    group: Group,
) -> None:
    members, metadata = group
    result = range_assignor.assign(GroupSpec(members), metadata)
    for topic_id, topic in metadata.items():
        subscribers = [m.member_id for m in members if topic_id in m.subscribed_topic_ids]
        if not subscribers:
            continue
        share = topic.partitions // len(subscribers)
        for member_id in subscribers:
            partitions = sorted(result[member_id].get(topic_id, ()))
            assert len(partitions) in (share, share + 1)
            assert (
                partitions == list(range(partitions[0], partitions[0] + len(partitions)))
                if partitions
                else True
            )


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=True, current=False))
def test_range_co_partitions_topics_of_equal_size(
    group: Group,
) -> None:
    members, metadata = group
    equal = {t: m for t, m in metadata.items() if m.partitions == 6}
    result = range_assignor.assign(GroupSpec(members), metadata)
    for assignment in result.values():
        ranges = {assignment[t] for t in equal if t in assignment}
        assert len(ranges) <= 1


def _with_current(
    members: list[MemberSpec], result: Mapping[str, Mapping[uuid.UUID, frozenset[int]]]
) -> list[MemberSpec]:
    return [
        MemberSpec(m.member_id, m.subscribed_topic_ids, result.get(m.member_id, {}))
        for m in members
    ]


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True, current=False), st.data())
def test_uniform_homogeneous_is_sticky_when_a_member_leaves_or_joins(
    group: Group, data: st.DataObject
) -> None:
    members, metadata = group
    first = uniform.assign(GroupSpec(members), metadata)
    current = _with_current(members, first)
    if len(current) > 1 and data.draw(st.booleans()):
        gone = data.draw(st.sampled_from(current))
        after = [m for m in current if m is not gone]
        second = uniform.assign(GroupSpec(after), metadata)
        # Nobody who stays loses a partition.
        for spec in after:
            for topic_id, partitions in spec.assignment.items():
                assert partitions <= second[spec.member_id][topic_id]
    else:
        joining = MemberSpec("new-member", current[0].subscribed_topic_ids)
        after = [*current, joining]
        second = uniform.assign(GroupSpec(after), metadata)
        # Nobody who stays gains one: everything that moves goes to the new member.
        for spec in current:
            for topic_id, partitions in second[spec.member_id].items():
                assert partitions <= spec.assignment[topic_id]
    assert_valid(second, after, metadata)


@st.composite
def owned_groups(draw: st.DrawFn) -> Group:
    """Members with one subscription, each partition held by at most one."""
    metadata = {t: TopicMetadata(draw(st.integers(0, 12))) for t in (T1, T2, T_HIGH)}
    subscribed = frozenset(draw(st.lists(st.sampled_from(sorted(metadata)), unique=True)))
    member_ids = [f"m{i}" for i in range(draw(st.integers(1, 6)))]
    held: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in member_ids}
    for topic_id in subscribed:
        for partition in range(metadata[topic_id].partitions):
            owner = draw(st.sampled_from([None, *member_ids]))
            if owner is not None:
                held[owner].setdefault(topic_id, set()).add(partition)
    members = [
        MemberSpec(m, subscribed, {t: frozenset(p) for t, p in held[m].items()}) for m in member_ids
    ]
    return members, metadata


@settings(max_examples=300, deadline=None)
@given(owned_groups())
def test_uniform_homogeneous_moves_no_more_than_balance_needs(group: Group) -> None:
    members, metadata = group
    result = uniform.assign(GroupSpec(members), metadata)
    assert_valid(result, members, metadata)
    total = sum(metadata[t].partitions for t in members[0].subscribed_topic_ids)
    quota, extra = divmod(total, len(members))
    held = [sum(map(len, m.assignment.values())) for m in members]
    # The most any balanced assignment can leave in place.
    best = sum(min(h, quota) for h in held) + min(extra, sum(1 for h in held if h > quota))
    kept = sum(
        len(partitions & result[m.member_id].get(t, frozenset()))
        for m in members
        for t, partitions in m.assignment.items()
    )
    assert kept == best
