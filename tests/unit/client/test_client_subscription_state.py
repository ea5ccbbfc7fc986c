"""SubscriptionState: subscriptions, assignments and positions."""

from __future__ import annotations

import re

import pytest

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.subscription_state import SubscriptionState, SubscriptionType

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_subscribing_and_assigning_exclude_each_other() -> None:
    state = SubscriptionState()
    state.subscribe(["a"])
    with pytest.raises(RuntimeError, match="exclude each other"):
        state.assign_from_user([A0])
    with pytest.raises(RuntimeError):
        state.subscribe_pattern(re.compile("a.*"))
    state.unsubscribe()
    assert state.type is SubscriptionType.NONE
    state.assign_from_user([A0])
    assert not state.partitions_auto_assigned()
    with pytest.raises(RuntimeError):
        state.assign_from_subscribed([A1])


def test_subscribe_reports_whether_the_topics_changed() -> None:
    state = SubscriptionState()
    assert state.subscribe(["a", "b"])
    assert not state.subscribe(["b", "a"])
    assert state.subscribe(["a"])


def test_a_new_partition_starts_initializing_then_awaits_reset() -> None:
    state = SubscriptionState("earliest")
    state.subscribe(["a"])
    state.assign_from_subscribed([A0, A1])
    assert state.initializing_partitions() == [A0, A1]
    assert not state.has_all_fetch_positions()
    state.request_reset([A1])
    assert state.initializing_partitions() == [A0]
    assert state.partitions_awaiting_reset() == {A1: "earliest"}
    state.seek(A0, 10)
    state.seek(A1, 0)
    assert state.has_all_fetch_positions()
    assert state.partitions_awaiting_reset() == {}


def test_kept_partitions_keep_their_position_across_assignments() -> None:
    """What a cooperative rebalance relies on."""
    state = SubscriptionState()
    state.subscribe(["a"])
    state.assign_from_subscribed([A0, A1])
    state.seek(A0, 42)
    version = state.assignment_version
    state.assign_from_subscribed([A0])
    assert state.position(A0) == 42
    assert not state.is_assigned(A1)
    assert state.assignment_version == version + 1
    state.assign_from_subscribed([A0])
    assert state.assignment_version == version + 1


def test_every_seek_gives_a_new_epoch_even_after_reassignment() -> None:
    state = SubscriptionState()
    state.subscribe(["a"])
    state.assign_from_subscribed([A0])
    epochs = {state.state(A0).epoch}
    state.seek(A0, 5)
    epochs.add(state.state(A0).epoch)
    state.advance(A0, 9)  # handing out records is not a seek
    epochs.add(state.state(A0).epoch)
    state.assign_from_subscribed([])
    state.assign_from_subscribed([A0])
    epochs.add(state.state(A0).epoch)
    assert len(epochs) == 3


def test_paused_partitions_are_not_fetchable_but_keep_their_position() -> None:
    state = SubscriptionState()
    state.assign_from_user([A0, B0])
    state.seek(A0, 1)
    state.seek(B0, 2)
    state.pause([A0])
    assert state.fetchable_partitions() == [B0]
    assert state.paused_partitions() == {A0}
    assert state.all_consumed() == {A0: OffsetAndMetadata(1), B0: OffsetAndMetadata(2)}
    state.resume([A0])
    assert state.fetchable_partitions() == [A0, B0]


def test_all_consumed_skips_partitions_without_a_position() -> None:
    state = SubscriptionState()
    state.assign_from_user([A0, A1])
    state.seek(A1, 3)
    assert state.all_consumed() == {A1: OffsetAndMetadata(3)}


def test_pattern_subscription_follows_the_matching_topics() -> None:
    state = SubscriptionState()
    state.subscribe_pattern(re.compile(r"orders-.*"))
    assert state.matches_subscribed_pattern("orders-eu")
    assert not state.matches_subscribed_pattern("xorders-eu")
    assert state.subscribe_from_pattern(["orders-eu"])
    assert not state.subscribe_from_pattern(["orders-eu"])
    assert state.assignment_matches_subscription([TopicPartition("orders-us", 0)])
    assert not state.assignment_matches_subscription([TopicPartition("other", 0)])


def test_the_leader_watches_the_whole_groups_topics() -> None:
    state = SubscriptionState()
    state.subscribe(["a"])
    assert state.group_subscribe(["a", "b"])
    assert state.metadata_topics() == {"a", "b"}
    state.reset_group_subscription()
    assert state.metadata_topics() == {"a"}


def test_an_assignment_outside_the_subscription_is_noticed() -> None:
    state = SubscriptionState()
    state.subscribe(["a"])
    assert state.assignment_matches_subscription([A0, A1])
    assert not state.assignment_matches_subscription([A0, B0])


def test_unassigned_partitions_are_refused_by_name() -> None:
    state = SubscriptionState()
    state.assign_from_user([A0])
    with pytest.raises(KeyError, match="b-0 is not assigned"):
        state.seek(B0, 1)
