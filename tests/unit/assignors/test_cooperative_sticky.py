"""What the cooperative-sticky assignor adds: partitions change hands over two
rebalances (KIP-429)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroups.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)

from .invariants import check_as_balanced_as_possible, check_evenly_balanced, check_valid
from .rounds import reporting
from .strategies import Group, groups
from .test_sticky import claiming, claims

NAME = "cooperative-sticky"


def newly_assigned_but_owned_elsewhere(
    subscriptions: dict[str, Subscription], result: dict[str, Assignment]
) -> list[tuple[str, TopicPartition]]:
    owners: dict[TopicPartition, set[str]] = {}
    for member_id, s in subscriptions.items():
        for tp in s.owned_partitions:
            owners.setdefault(tp, set()).add(member_id)
    return [
        (member_id, tp)
        for member_id, a in result.items()
        for tp in a.partitions
        if tp not in subscriptions[member_id].owned_partitions and owners.get(tp)
    ]


@settings(max_examples=100, deadline=None)
@given(data=st.data(), group=groups())
def test_never_hands_over_a_partition_another_member_still_owns(
    data: st.DataObject, group: Group
) -> None:
    subscriptions = claiming(NAME, group, data.draw(claims(group)))
    result = CooperativeStickyAssignor().assign(group.partitions_per_topic, subscriptions)
    check_valid(group.partitions_per_topic, subscriptions, result, complete=False)
    assert newly_assigned_but_owned_elsewhere(subscriptions, result) == []


@settings(max_examples=80, deadline=None)
@given(data=st.data(), group=groups())
def test_the_follow_up_rebalance_completes_the_assignment(
    data: st.DataObject, group: Group
) -> None:
    """After the first round each member owns exactly what it was given; the
    second round hands out what was held back, balanced."""
    assignor = CooperativeStickyAssignor()
    claimed = data.draw(claims(group))
    first = assignor.assign(group.partitions_per_topic, claiming(NAME, group, claimed))
    generation = max(g for _, g in claimed.values()) + 1
    second = assignor.assign(
        group.partitions_per_topic, reporting(NAME, group.subscriptions, first, generation)
    )
    check_valid(group.partitions_per_topic, group.subscriptions, second)
    check_as_balanced_as_possible(group.subscriptions, second)
    for member_id, a in first.items():
        assert set(a.partitions) <= set(second[member_id].partitions)


def test_a_newcomer_gets_its_share_in_the_second_round() -> None:
    topics = {"t": 6}
    assignor = CooperativeStickyAssignor()
    first = assignor.assign(topics, {"a": Subscription(["t"]), "b": Subscription(["t"])})
    joined = reporting(NAME, {"a": Subscription(["t"]), "b": Subscription(["t"])}, first, 1)
    joined["c"] = Subscription(["t"], generation_id=-1)
    revoking = assignor.assign(topics, joined)
    assert revoking["c"].partitions == []
    assert len(revoking["a"].partitions) == len(revoking["b"].partitions) == 2
    settled = assignor.assign(topics, reporting(NAME, joined, revoking, 2))
    assert sorted(len(a.partitions) for a in settled.values()) == [2, 2, 2]
    check_valid(topics, joined, settled)


def test_partitions_nobody_owns_are_handed_out_at_once() -> None:
    """Only moves between owners wait: a member that left has given its
    partitions up already."""
    topics = {"t": 4}
    first = CooperativeStickyAssignor().assign(topics, {m: Subscription(["t"]) for m in ("a", "b")})
    rejoined = reporting(NAME, {"a": Subscription(["t"])}, first, 1)
    result = CooperativeStickyAssignor().assign(topics, rejoined)
    assert len(result["a"].partitions) == 4


def test_generation_from_user_data_of_older_members() -> None:
    """Members on subscription v0/v1 send their generation as an int32 in the
    user data; the newer one wins a partition both claim."""
    tp = TopicPartition("t", 0)
    subscriptions = {
        "old": Subscription(["t"], struct.pack(">i", 2), [tp]),
        "new": Subscription(["t"], struct.pack(">i", 9), [tp]),
    }
    result = CooperativeStickyAssignor().assign({"t": 2}, subscriptions)
    assert tp in result["new"].partitions


@settings(max_examples=40, deadline=None)
@given(group=groups(identical=True))
def test_identical_subscriptions_settle_evenly(group: Group) -> None:
    assignor = CooperativeStickyAssignor()
    first = assignor.assign(group.partitions_per_topic, group.subscriptions)
    check_evenly_balanced(first)


def test_member_side() -> None:
    assignor = CooperativeStickyAssignor()
    assert assignor.supported_protocols == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    assert assignor.subscription_user_data({"t"}) == struct.pack(">i", -1)
    assignor.on_assignment(Assignment([TopicPartition("t", 0)]), 12)
    assert assignor.subscription_user_data({"t"}) == struct.pack(">i", 12)
