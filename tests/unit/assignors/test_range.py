"""The range assignor, against the Java client's documented behaviour."""

from __future__ import annotations

from hypothesis import given, settings
from kafka.coordinator.assignors.range import RangePartitionAssignor

from kgroups.assignors import RangeAssignor, Subscription, TopicPartition

from .invariants import check_valid
from .kafka_python_group import kafka_python_assign
from .strategies import Group, groups


def named(assignments: dict) -> dict[str, list[str]]:  # type: ignore[type-arg]
    return {m: [f"{t}p{p}" for t, p in a.partitions] for m, a in assignments.items()}


def test_two_topics_of_four_partitions() -> None:
    """Seed 003 §4: each member gets a contiguous half of each topic."""
    result = RangeAssignor().assign(
        {"t0": 4, "t1": 4}, {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    )
    assert named(result) == {
        "C0": ["t0p0", "t0p1", "t1p0", "t1p1"],
        "C1": ["t0p2", "t0p3", "t1p2", "t1p3"],
    }


def test_the_first_members_take_the_extra_partitions() -> None:
    """The Java javadoc example: three partitions per topic, two members."""
    result = RangeAssignor().assign(
        {"t0": 3, "t1": 3}, {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    )
    assert named(result) == {"C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t1p2"]}


def test_static_members_keep_their_ranges_across_new_member_ids() -> None:
    """The javadoc's rolling bounce: new member ids, same group.instance.ids,
    same assignment; without instance ids it would flip."""
    topics = {"t0": 3, "t1": 3}
    before = RangeAssignor().assign(
        topics,
        {
            "C0": Subscription(["t0", "t1"], group_instance_id="I0"),
            "C1": Subscription(["t0", "t1"], group_instance_id="I1"),
        },
    )
    after = RangeAssignor().assign(
        topics,
        {
            "C3": Subscription(["t0", "t1"], group_instance_id="I0"),
            "C2": Subscription(["t0", "t1"], group_instance_id="I1"),
        },
    )
    assert before["C0"] == after["C3"] and before["C1"] == after["C2"]
    dynamic = RangeAssignor().assign(
        topics, {"C3": Subscription(["t0", "t1"]), "C2": Subscription(["t0", "t1"])}
    )
    assert named(dynamic)["C2"] == ["t0p0", "t0p1", "t1p0", "t1p1"]


def test_static_members_come_before_dynamic_ones() -> None:
    result = RangeAssignor().assign(
        {"t": 3},
        {
            "a": Subscription(["t"]),
            "z": Subscription(["t"], group_instance_id="late"),
        },
    )
    assert named(result) == {"z": ["tp0", "tp1"], "a": ["tp2"]}


def test_members_are_ordered_like_java_strings() -> None:
    """Java compares UTF-16 code units: U+1F600 (a surrogate pair starting
    0xD83D) sorts before U+FF21."""
    result = RangeAssignor().assign(
        {"t": 2}, {"\uff21": Subscription(["t"]), "\U0001f600": Subscription(["t"])}
    )
    assert named(result) == {"\uff21": ["tp1"], "\U0001f600": ["tp0"]}


def test_topics_that_do_not_exist_are_skipped_and_everyone_gets_an_entry() -> None:
    result = RangeAssignor().assign(
        {"t": 2, "empty": 0}, {"a": Subscription(["t", "gone"]), "b": Subscription(["empty"])}
    )
    assert named(result) == {"a": ["tp0", "tp1"], "b": []}


def test_rack_aware_ranges_follow_replica_racks() -> None:
    """Partitions alternate between racks a and b; each member gets its rack's
    partitions, still two each."""
    racks = {TopicPartition("t", p): {"a" if p % 2 == 0 else "b"} for p in range(4)}
    result = RangeAssignor().assign(
        {"t": 4},
        {"c0": Subscription(["t"], rack_id="a"), "c1": Subscription(["t"], rack_id="b")},
        partition_racks=racks,
    )
    assert named(result) == {"c0": ["tp0", "tp2"], "c1": ["tp1", "tp3"]}


def test_rack_aware_keeps_co_partitioned_topics_together() -> None:
    """Two topics with the same partition count and members: partition i of
    both goes to one member, on a rack holding replicas of both."""
    racks = {TopicPartition(t, p): {"ab"[p % 2]} for t in ("x", "y") for p in range(4)}
    subscriptions = {
        "c0": Subscription(["x", "y"], rack_id="a"),
        "c1": Subscription(["x", "y"], rack_id="b"),
    }
    result = RangeAssignor().assign({"x": 4, "y": 4}, subscriptions, partition_racks=racks)
    assert named(result) == {
        "c0": ["xp0", "xp2", "yp0", "yp2"],
        "c1": ["xp1", "xp3", "yp1", "yp3"],
    }


def test_rack_aware_puts_balance_before_locality() -> None:
    """Three partitions on rack a, one on b, two members: c0 on rack a can
    only take two; the third rack-a partition goes to c1 regardless."""
    racks = {TopicPartition("t", p): {"a"} for p in range(3)} | {TopicPartition("t", 3): {"b"}}
    result = RangeAssignor().assign(
        {"t": 4},
        {"c0": Subscription(["t"], rack_id="a"), "c1": Subscription(["t"], rack_id="b")},
        partition_racks=racks,
    )
    assert named(result) == {"c0": ["tp0", "tp1"], "c1": ["tp2", "tp3"]}


def test_racks_are_ignored_when_every_partition_is_on_every_rack() -> None:
    racks = {TopicPartition("t", p): {"a", "b"} for p in range(4)}
    subscriptions = {"c0": Subscription(["t"], rack_id="b"), "c1": Subscription(["t"], rack_id="a")}
    with_racks = RangeAssignor().assign({"t": 4}, subscriptions, partition_racks=racks)
    assert with_racks == RangeAssignor().assign({"t": 4}, subscriptions)


def test_members_without_a_rack_take_any_partition() -> None:
    racks = {TopicPartition("t", p): {"ab"[p % 2]} for p in range(4)}
    result = RangeAssignor().assign(
        {"t": 4},
        {"c0": Subscription(["t"]), "c1": Subscription(["t"], rack_id="b")},
        partition_racks=racks,
    )
    # c0 (no rack) takes the first two in order; c1 the rest.
    assert named(result) == {"c0": ["tp0", "tp1"], "c1": ["tp2", "tp3"]}


@settings(max_examples=100, deadline=None)
@given(groups())
def test_valid_and_balanced_per_topic(group: Group) -> None:
    result = RangeAssignor().assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result)
    for topic, count in group.partitions_per_topic.items():
        members = [m for m, s in group.subscriptions.items() if topic in s.topics]
        per_member = [sum(1 for t, _ in result[m].partitions if t == topic) for m in members]
        if per_member:
            assert max(per_member) - min(per_member) <= 1
            assert sum(per_member) == count


@settings(max_examples=100, deadline=None)
@given(groups(racks=True))
def test_rack_aware_is_valid_and_keeps_per_topic_quotas(group: Group) -> None:
    racks = {
        TopicPartition(t, p): {"abc"[(p + len(t)) % 3], "abc"[p % 2]}
        for t, n in group.partitions_per_topic.items()
        for p in range(n)
    }
    result = RangeAssignor().assign(
        group.partitions_per_topic, group.subscriptions, partition_racks=racks
    )
    check_valid(group.partitions_per_topic, group.subscriptions, result)
    for topic, count in group.partitions_per_topic.items():
        members = [m for m, s in group.subscriptions.items() if topic in s.topics]
        per_member = sorted(sum(1 for t, _ in result[m].partitions if t == topic) for m in members)
        if members:
            base, extra = divmod(count, len(members))
            assert per_member == [base] * (len(members) - extra) + [base + 1] * extra


@settings(max_examples=100, deadline=None)
@given(groups(static_members=False))
def test_same_as_kafka_python_for_dynamic_members(group: Group) -> None:
    ours = RangeAssignor().assign(group.partitions_per_topic, group.subscriptions)
    theirs = kafka_python_assign(
        RangePartitionAssignor, group.partitions_per_topic, group.subscriptions
    )
    assert {m: sorted(a.partitions) for m, a in ours.items()} == {
        m: sorted(a.partitions) for m, a in theirs.items()
    }


@settings(max_examples=50, deadline=None)
@given(groups())
def test_same_as_kafka_python_when_all_members_are_static_or_none(group: Group) -> None:
    """kafka-python groups static and dynamic members with itertools.groupby
    over the unsorted list, which drops members when the two kinds alternate;
    so static members are compared only in groups that are all static or all
    dynamic. It also orders by Python's code points, not Java's UTF-16 units:
    the strategies use ASCII names, where the two agree."""
    kinds = {s.group_instance_id is None for s in group.subscriptions.values()}
    if len(kinds) > 1:
        for s in group.subscriptions.values():
            s.group_instance_id = None
    ours = RangeAssignor().assign(group.partitions_per_topic, group.subscriptions)
    theirs = kafka_python_assign(
        RangePartitionAssignor, group.partitions_per_topic, group.subscriptions
    )
    assert {m: sorted(a.partitions) for m, a in ours.items()} == {
        m: sorted(a.partitions) for m, a in theirs.items()
    }
