"""The roundrobin assignor, against the Java client's documented behaviour."""

from __future__ import annotations

from hypothesis import given, settings
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from kgroups.assignors import Assignment, RoundRobinAssignor, Subscription

from .invariants import check_evenly_balanced, check_valid
from .kafka_python_group import kafka_python_assign
from .strategies import Group, groups


def named(assignments: dict[str, Assignment]) -> dict[str, list[str]]:
    return {m: [f"{t}p{p}" for t, p in a.partitions] for m, a in assignments.items()}


def test_identical_subscriptions_deal_evenly() -> None:
    """Seed 003 §4 and the javadoc: three partitions per topic, two members."""
    result = RoundRobinAssignor().assign(
        {"t0": 3, "t1": 3}, {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0", "t1"])}
    )
    assert named(result) == {"C0": ["t0p0", "t0p2", "t1p1"], "C1": ["t0p1", "t1p0", "t1p2"]}


def test_members_not_subscribed_are_passed_over() -> None:
    """Seed 003 §4 and the javadoc: topics of 1, 2 and 3 partitions."""
    result = RoundRobinAssignor().assign(
        {"t0": 1, "t1": 2, "t2": 3},
        {
            "C0": Subscription(["t0"]),
            "C1": Subscription(["t0", "t1"]),
            "C2": Subscription(["t0", "t1", "t2"]),
        },
    )
    assert named(result) == {"C0": ["t0p0"], "C1": ["t1p0"], "C2": ["t1p1", "t2p0", "t2p1", "t2p2"]}


def test_static_members_keep_their_partitions_across_new_member_ids() -> None:
    """The javadoc's rolling bounce with three members: new member ids, same
    group.instance.ids, same assignment."""
    topics = {"t0": 3, "t1": 3}
    before = {f"C{i}": Subscription(["t0", "t1"], group_instance_id=f"I{i}") for i in range(3)}
    result = RoundRobinAssignor().assign(topics, before)
    assert named(result) == {
        "C0": ["t0p0", "t1p0"],
        "C1": ["t0p1", "t1p1"],
        "C2": ["t0p2", "t1p2"],
    }
    renamed = {"C5": "I0", "C3": "I1", "C4": "I2"}
    after = RoundRobinAssignor().assign(
        topics, {m: Subscription(["t0", "t1"], group_instance_id=i) for m, i in renamed.items()}
    )
    assert named(after) == {
        "C5": ["t0p0", "t1p0"],
        "C3": ["t0p1", "t1p1"],
        "C4": ["t0p2", "t1p2"],
    }
    dynamic = RoundRobinAssignor().assign(topics, {m: Subscription(["t0", "t1"]) for m in renamed})
    assert named(dynamic)["C3"] == ["t0p0", "t1p0"]


def test_the_deal_continues_across_topics() -> None:
    """The member after the one that got a topic's last partition gets the next
    topic's first."""
    result = RoundRobinAssignor().assign(
        {"a": 1, "b": 2}, {m: Subscription(["a", "b"]) for m in ("m0", "m1", "m2")}
    )
    assert named(result) == {"m0": ["ap0"], "m1": ["bp0"], "m2": ["bp1"]}


@settings(max_examples=100, deadline=None)
@given(groups())
def test_valid(group: Group) -> None:
    result = RoundRobinAssignor().assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result)


@settings(max_examples=100, deadline=None)
@given(groups(identical=True))
def test_identical_subscriptions_are_evenly_balanced(group: Group) -> None:
    result = RoundRobinAssignor().assign(group.partitions_per_topic, group.subscriptions)
    check_evenly_balanced(result)


@settings(max_examples=100, deadline=None)
@given(groups(identical=True, static_members=False))
def test_same_as_kafka_python_for_dynamic_members(group: Group) -> None:
    """Partition for partition, with identical subscriptions: when kafka-python
    has to pass over a member it puts the (instance id, member id) pair where
    the member id belongs and fails with a KeyError. (Static members: see the
    range test for why kafka-python is only comparable when they are all
    static.)"""
    ours = RoundRobinAssignor().assign(group.partitions_per_topic, group.subscriptions)
    theirs = kafka_python_assign(
        RoundRobinPartitionAssignor, group.partitions_per_topic, group.subscriptions
    )
    assert {m: sorted(a.partitions) for m, a in ours.items()} == {
        m: sorted(a.partitions) for m, a in theirs.items()
    }


@settings(max_examples=50, deadline=None)
@given(groups(identical=True))
def test_same_as_kafka_python_when_all_members_are_static_or_none(group: Group) -> None:
    if len({s.group_instance_id is None for s in group.subscriptions.values()}) > 1:
        for s in group.subscriptions.values():
            s.group_instance_id = None
    ours = RoundRobinAssignor().assign(group.partitions_per_topic, group.subscriptions)
    theirs = kafka_python_assign(
        RoundRobinPartitionAssignor, group.partitions_per_topic, group.subscriptions
    )
    assert {m: sorted(a.partitions) for m, a in ours.items()} == {
        m: sorted(a.partitions) for m, a in theirs.items()
    }
