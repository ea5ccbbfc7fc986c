"""ConsumerMembership, the state of a KIP-848 member: what each heartbeat carries
and how each answer moves the member, as in the Java client -- no IO, no loop."""

from __future__ import annotations

import datetime
import re
import uuid
from types import SimpleNamespace as NS
from typing import Any

import pytest

from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_membership import ConsumerMembership, MemberState
from kgroups.client.exceptions import CommitFailedError, FencedInstanceIdError
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode, KafkaError

TOPIC_ID = uuid.UUID(int=7)


def _member(
    *, regex: str | None = None, **config: Any
) -> tuple[ConsumerMembership, SubscriptionState]:
    settings = {
        "bootstrap.servers": "fake:9092",
        "group.id": "g",
        "group.protocol": "consumer",
        "retry.backoff.ms": 100,
        **config,
    }
    subscriptions = SubscriptionState()
    if regex is None:
        subscriptions.subscribe(["t"])
    else:
        subscriptions.subscribe_regex(regex)
    member = ConsumerMembership(ConsumerConfig.from_dict(settings), subscriptions, now=0.0)
    member.join(0.0)
    return member, subscriptions


def answer(
    epoch: int = 1,
    partitions: tuple[int, ...] | None = (0, 1),
    *,
    error: ErrorCode = ErrorCode.none,
    member_id: str | None = None,
    interval_ms: int = 2000,
) -> Any:
    assignment = None
    if partitions is not None:
        assignment = NS(topic_partitions=(NS(topic_id=TOPIC_ID, partitions=partitions),))
    return NS(
        error_code=error,
        error_message=None,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=interval_ms),
        assignment=assignment,
    )


def test_the_join_heartbeat_carries_every_field_and_later_ones_only_changes() -> None:
    member, subscriptions = _member(**{"group.remote.assignor": "range", "client.rack": "r1"})
    join, sent = member.heartbeat_request(1, 0.0)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", join.member_id)  # Kafka's Uuid text form
    assert join.member_epoch == 0
    assert join.subscribed_topic_names == ("t",)
    assert join.subscribed_topic_regex is None
    assert join.rebalance_timeout.total_seconds() == 300
    assert join.server_assignor == "range"
    assert join.rack_id == "r1"
    assert join.topic_partitions == ()

    member.on_heartbeat_response(answer(epoch=1, partitions=None), sent, 0.1)
    assert member.state is MemberState.JOINING
    member.state = MemberState.STABLE  # as if an assignment had been reconciled
    later, sent = member.heartbeat_request(1, 2.1)
    assert later.member_id == join.member_id and later.member_epoch == 1
    assert later.subscribed_topic_names is None
    assert later.rebalance_timeout.total_seconds() == -0.001
    assert later.server_assignor is None and later.rack_id is None
    assert later.topic_partitions is None

    subscriptions.subscribe(["t", "u"])
    changed, sent = member.heartbeat_request(1, 4.1)
    assert changed.subscribed_topic_names == ("t", "u")
    assert changed.topic_partitions is None


def test_after_an_error_the_next_heartbeat_carries_every_field_again() -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(), sent, 0.1)
    _, sent = member.heartbeat_request(1, 2.1)
    member.on_heartbeat_response(answer(error=ErrorCode.coordinator_load_in_progress), sent, 2.2)
    assert member.time_to_heartbeat(2.2) == pytest.approx(0.1)  # retry.backoff.ms
    again, sent = member.heartbeat_request(1, 2.3)
    assert again.subscribed_topic_names == ("t",)
    assert again.rebalance_timeout.total_seconds() == 300
    assert again.topic_partitions == ()


def test_a_regex_subscription_goes_to_the_coordinator() -> None:
    member, _ = _member(regex="orders-.*")
    join, _ = member.heartbeat_request(1, 0.0)
    assert join.subscribed_topic_regex == "orders-.*"
    assert join.subscribed_topic_names is None


def test_an_assignment_is_reconciled_then_acknowledged_at_once() -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=3, partitions=(0, 1)), sent, 0.1)
    assert member.state is MemberState.RECONCILING and member.epoch == 3
    owned = frozenset({(TOPIC_ID, 0), (TOPIC_ID, 1)})
    assert member.target == owned
    assert member.on_reconciled(owned, member.incarnation, 0.5)
    assert member.state is MemberState.ACKNOWLEDGING
    assert member.time_to_heartbeat(0.5) == 0.0  # not a full interval later
    ack, sent = member.heartbeat_request(1, 0.5)
    assert [(t.topic_id, list(t.partitions)) for t in ack.topic_partitions] == [(TOPIC_ID, [0, 1])]
    member.on_heartbeat_response(answer(epoch=3, partitions=None), sent, 0.6)
    assert member.state is MemberState.STABLE
    assert member.time_to_heartbeat(0.6) == pytest.approx(2.0)  # the interval it was given


@pytest.mark.parametrize("error", [ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id])
def test_a_fenced_member_releases_then_joins_again_with_epoch_0(error: ErrorCode) -> None:
    member, _ = _member()
    first, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=5), sent, 0.1)
    incarnation = member.incarnation
    _, sent = member.heartbeat_request(1, 2.1)
    member.on_heartbeat_response(answer(error=error), sent, 2.2)
    assert member.state is MemberState.FENCED and member.needs_release()
    assert member.epoch == 0 and member.incarnation != incarnation
    # A reconciliation begun before the fencing does not complete.
    assert not member.on_reconciled(frozenset(), incarnation, 2.3)
    assert member.time_to_heartbeat(2.3) is None  # not before the partitions are released
    member.on_released()
    member.join(2.4)
    rejoin, sent = member.heartbeat_request(1, 2.4)
    assert rejoin.member_epoch == 0
    assert rejoin.member_id == first.member_id  # the id lives as long as the consumer
    assert rejoin.subscribed_topic_names == ("t",) and rejoin.topic_partitions == ()


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.group_authorization_failed,
        ErrorCode.invalid_request,
        ErrorCode.group_max_size_reached,
        ErrorCode.unsupported_assignor,
        ErrorCode.unsupported_version,
        ErrorCode.unreleased_instance_id,
        ErrorCode.fenced_instance_id,
        ErrorCode.invalid_regular_expression,
    ],
)
def test_errors_no_retry_can_cure_are_fatal(error: ErrorCode) -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(error=error), sent, 0.1)
    assert member.state is MemberState.FATAL
    with pytest.raises(KafkaError) as raised:
        member.check_fatal()
    assert raised.value.error_code == error
    if error == ErrorCode.fenced_instance_id:
        assert isinstance(raised.value, FencedInstanceIdError)
    assert member.time_to_heartbeat(0.2) is None


def test_the_coordinator_moving_retries_at_once() -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(error=ErrorCode.not_coordinator), sent, 0.1)
    assert member.state is MemberState.JOINING
    assert member.time_to_heartbeat(0.1) == 0.0


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("i1", -2)])
def test_leaving_sends_epoch_minus_1_or_minus_2_for_a_static_member(
    instance_id: str | None, epoch: int
) -> None:
    member, _ = _member(**{"group.instance.id": instance_id})
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=4), sent, 0.1)
    assert member.leave("closing")
    leave = member.leave_request(1)
    assert leave.member_epoch == epoch
    assert leave.instance_id == instance_id
    member.on_left()
    assert member.state is MemberState.UNSUBSCRIBED
    assert not member.leave("again")


def test_with_v0_the_coordinator_chooses_the_member_id() -> None:
    member, _ = _member()
    join, sent = member.heartbeat_request(0, 0.0)
    assert join.member_id == ""
    member.on_heartbeat_response(answer(member_id="chosen-by-broker"), sent, 0.1)
    later, sent = member.heartbeat_request(0, 2.1)
    assert later.member_id == "chosen-by-broker"


def test_commits_carry_the_member_epoch_and_fail_outside_the_group() -> None:
    member, _ = _member()
    with pytest.raises(CommitFailedError):
        member.generation_for_commit()
    assert member.fetch_identity() == (None, -1)
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=6), sent, 0.1)
    assert member.generation_for_commit().generation_id == 6
    assert member.fetch_identity() == (member.member_id, 6)


def test_a_poll_timeout_expires_only_in_the_group() -> None:
    member, _ = _member(**{"max.poll.interval.ms": 1000})
    assert member.poll_expired(1.0)  # joining counts: it heartbeats
    member.on_poll(1.0)
    assert not member.poll_expired(1.5)
    assert member.leave("poll timeout")
    member.on_left(stale=True)
    assert member.state is MemberState.STALE and member.needs_release()
    assert not member.poll_expired(5.0)


def test_an_answer_to_a_heartbeat_sent_before_leaving_is_ignored_after_rejoining() -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=3), sent, 0.1)
    _, before_leaving = member.heartbeat_request(1, 2.1)
    assert member.leave("unsubscribed")
    member.on_left()
    member.join(2.2)
    member.on_heartbeat_response(answer(epoch=3), before_leaving, 2.3)
    assert member.state is MemberState.JOINING and member.epoch == 0


def test_a_commit_the_coordinator_answers_unknown_member_fences_the_member() -> None:
    # The coordinator says it does not know the member (its session ran out
    # while it could not heartbeat): its partitions are another member's now,
    # and it gives them up at once, not when its own heartbeat gets through.
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=5, partitions=(0,)), sent, 0.1)
    assert member.on_reconciled(frozenset({(TOPIC_ID, 0)}), member.incarnation, 0.2)
    made_in = member.generation_for_commit()
    member.reset_generation_on_error(ErrorCode.unknown_member_id, made_in)
    assert member.state is MemberState.FENCED and member.needs_release()


def test_a_commit_answered_for_an_older_epoch_does_not_fence_the_member() -> None:
    member, _ = _member()
    _, sent = member.heartbeat_request(1, 0.0)
    member.on_heartbeat_response(answer(epoch=5), sent, 0.1)
    made_in = member.generation_for_commit()
    _, sent = member.heartbeat_request(1, 2.1)
    member.on_heartbeat_response(answer(epoch=6), sent, 2.2)
    member.reset_generation_on_error(ErrorCode.unknown_member_id, made_in)
    assert member.in_group() and member.epoch == 6
