"""The group member's decisions without IO: time is a number passed in, answers
are plain objects, so every step is checked at an exact instant."""

from __future__ import annotations

from typing import Any

import pytest
from client_fakes import join_error, joined, synced

from kgroups.assignors.base import RebalanceProtocol
from kgroups.client.assignor_choice import common_rebalance_protocol, make_assignors
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.exceptions import FencedInstanceIdError, RetriableError
from kgroups.client.group_member import GroupMember, HeartbeatStep
from kgroups.client.group_membership import Generation, MemberState
from kgroups.client.rebalance_plan import after_assignment, before_rejoin
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode, KafkaError

SESSION, INTERVAL, MAX_POLL, BACKOFF = 1.0, 0.1, 5.0, 0.01


def _member(**config: Any) -> GroupMember:
    settings = {
        "bootstrap.servers": "fake:9092",
        "group.id": "g",
        "session.timeout.ms": int(SESSION * 1000),
        "heartbeat.interval.ms": int(INTERVAL * 1000),
        "max.poll.interval.ms": int(MAX_POLL * 1000),
        "retry.backoff.ms": int(BACKOFF * 1000),
        "partition.assignment.strategy": "range",
        **config,
    }
    consumer_config = ConsumerConfig.from_dict(settings)
    subscriptions = SubscriptionState()
    subscriptions.subscribe(["t"])
    assignors = make_assignors(consumer_config.partition_assignment_strategy)
    return GroupMember(
        consumer_config, subscriptions, assignors, common_rebalance_protocol(assignors), now=0.0
    )


def _stable(member: GroupMember, now: float = 0.0) -> GroupMember:
    member.join_request()
    assert member.on_join_response(joined(1, "m1", leader="m1"), now)
    _, sent = member.sync_request(())
    member.on_sync_response(synced(b""), sent)
    return member


def T(partition: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, partition)


# -- joining -------------------------------------------------------------------


def test_a_join_answered_with_an_id_joins_again_with_it() -> None:
    member = _member()
    assert member.join_request().member_id == ""
    with pytest.raises(KafkaError) as caught:
        member.on_join_response(join_error(ErrorCode.member_id_required, "given"), 0.0)
    assert caught.value.error_code == ErrorCode.member_id_required
    member.on_join_failed()
    assert member.join_request().member_id == "given"


def test_a_follower_joins_then_becomes_stable_with_its_assignment() -> None:
    member = _member()
    member.join_request()
    assert member.state is MemberState.PREPARING_REBALANCE
    assert not member.on_join_response(joined(3, "m2", leader="m1"), 0.0)
    assert member.state is MemberState.COMPLETING_REBALANCE
    assert member.generation == Generation(3, "m2", "range")
    request, sent = member.sync_request(())
    assert request.generation_id == 3
    assert member.on_sync_response(synced(b"abc"), sent) == b"abc"
    assert member.state is MemberState.STABLE
    assert not member.rejoin_needed


def test_a_join_to_a_loading_coordinator_is_retried() -> None:
    member = _member()
    member.join_request()
    with pytest.raises(RetriableError):
        member.on_join_response(join_error(ErrorCode.coordinator_load_in_progress), 0.0)
    assert member.fatal_error is None


def test_a_fenced_join_is_fatal() -> None:
    member = _member(**{"group.instance.id": "i1"})
    member.join_request()
    with pytest.raises(FencedInstanceIdError):
        member.on_join_response(join_error(ErrorCode.fenced_instance_id), 0.0)
    with pytest.raises(FencedInstanceIdError):
        member.check_fatal()
    assert member.heartbeat_step(0.0, True)[0] is HeartbeatStep.STOP


def test_a_sync_answer_after_the_generation_was_reset_is_refused() -> None:
    member = _member()
    member.join_request()
    member.on_join_response(joined(1, "m1", leader="m1"), 0.0)
    _, sent = member.sync_request(())
    member.on_heartbeat_response(ErrorCode.illegal_generation, sent, 0.0)
    with pytest.raises(KafkaError) as caught:
        member.on_sync_response(synced(b""), sent)
    assert caught.value.error_code == ErrorCode.illegal_generation


# -- heartbeats on a clock -------------------------------------------------------


def test_heartbeats_wait_for_the_join_then_follow_the_interval() -> None:
    member = _member()
    assert member.heartbeat_step(0.0, True)[0] is HeartbeatStep.AWAIT_JOIN
    _stable(member, now=10.0)
    assert member.heartbeat_step(10.05, True) == (HeartbeatStep.WAIT, pytest.approx(0.05))
    assert member.heartbeat_step(10.1, True) == (HeartbeatStep.SEND, INTERVAL)
    # One at a time: none goes out while the last is unanswered.
    assert member.heartbeat_step(10.3, True)[0] is HeartbeatStep.WAIT
    _, sent = member.heartbeat_request()
    assert not member.on_heartbeat_response(ErrorCode.none, sent, 10.3)
    assert member.heartbeat_step(10.3, True)[0] is HeartbeatStep.SEND


def test_a_failed_heartbeat_is_retried_after_the_backoff() -> None:
    member = _stable(_member())
    assert member.heartbeat_step(INTERVAL, True)[0] is HeartbeatStep.SEND
    member.on_heartbeat_failed(0.2)
    assert member.heartbeat_step(0.2 + BACKOFF / 2, True)[0] is HeartbeatStep.WAIT
    assert member.heartbeat_step(0.2 + BACKOFF, True)[0] is HeartbeatStep.SEND


def test_no_coordinator_means_finding_one() -> None:
    member = _stable(_member())
    assert member.heartbeat_step(0.5, False) == (HeartbeatStep.FIND_COORDINATOR, BACKOFF)


def test_a_session_without_answers_expires_once() -> None:
    member = _stable(_member())
    member.heartbeat_step(INTERVAL, True)  # sent, never answered
    assert member.heartbeat_step(SESSION - 0.001, True)[0] is HeartbeatStep.WAIT
    assert member.heartbeat_step(SESSION, True)[0] is HeartbeatStep.SESSION_EXPIRED
    # The session starts over for the coordinator found next.
    assert member.heartbeat_step(SESSION, True)[0] is not HeartbeatStep.SESSION_EXPIRED


def test_a_member_that_does_not_poll_must_leave() -> None:
    member = _stable(_member())
    for now in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5):
        _, sent = member.heartbeat_request()
        member.on_heartbeat_response(ErrorCode.none, sent, now)
    assert member.heartbeat_step(MAX_POLL, True)[0] is HeartbeatStep.POLL_EXPIRED
    member.heartbeat.poll(MAX_POLL)
    assert member.heartbeat_step(MAX_POLL, True)[0] is not HeartbeatStep.POLL_EXPIRED


def test_rebalance_in_progress_asks_a_stable_member_to_rejoin() -> None:
    member = _stable(_member())
    _, sent = member.heartbeat_request()
    assert not member.on_heartbeat_response(ErrorCode.rebalance_in_progress, sent, 0.5)
    assert member.rejoin_needed
    assert member.generation.generation_id == 1


@pytest.mark.parametrize(
    ("error", "member_id"),
    [(ErrorCode.illegal_generation, "m1"), (ErrorCode.unknown_member_id, "")],
)
def test_a_heartbeat_refused_for_the_generation_resets_it(error: ErrorCode, member_id: str) -> None:
    member = _stable(_member())
    _, sent = member.heartbeat_request()
    assert member.on_heartbeat_response(error, sent, 0.5)
    assert member.generation == Generation(-1, member_id, None)
    assert member.state is MemberState.UNJOINED
    assert member.rejoin_needed


def test_a_refusal_for_an_older_generation_is_ignored() -> None:
    member = _stable(_member())
    old = member.generation
    member.join_request()
    member.on_join_response(joined(2, "m1", leader="m1"), 0.0)
    member.on_heartbeat_response(ErrorCode.unknown_member_id, old, 0.5)
    assert member.generation.generation_id == 2
    assert member.state is MemberState.COMPLETING_REBALANCE


# -- leaving -------------------------------------------------------------------


def test_only_a_dynamic_member_in_the_group_sends_leave() -> None:
    assert _member().leave_request("bye", True) is None  # never joined
    member = _stable(_member())
    assert member.leave_request("bye", False) is None  # no coordinator to tell
    request = member.leave_request("bye", True)
    assert request is not None
    assert request.members[0].member_id == "m1"
    static = _stable(_member(**{"group.instance.id": "i1"}))
    assert static.leave_request("bye", True) is None
    member.on_left("bye")
    assert member.generation.member_id == ""
    assert member.rejoin_needed


# -- what the listener hears, in which order -------------------------------------

OWNED = {T(0), T(1), T(0, "gone")}


def test_eager_revokes_everything_after_committing() -> None:
    plan = before_rejoin(RebalanceProtocol.EAGER, True, OWNED, {"t"})
    assert (plan.hook, plan.partitions, plan.commit, plan.kept) == (
        "on_partitions_revoked",
        frozenset(OWNED),
        True,
        frozenset(),
    )
    # Even with nothing owned, as Java does before every eager rejoin.
    assert before_rejoin(RebalanceProtocol.EAGER, True, set(), {"t"}).hook == (
        "on_partitions_revoked"
    )


def test_cooperative_revokes_only_unsubscribed_topics_before_rejoining() -> None:
    plan = before_rejoin(RebalanceProtocol.COOPERATIVE, True, OWNED, {"t"})
    assert plan.hook == "on_partitions_revoked"
    assert plan.partitions == {T(0, "gone")}
    assert plan.kept == {T(0), T(1)}
    quiet = before_rejoin(RebalanceProtocol.COOPERATIVE, True, {T(0)}, {"t"})
    assert quiet.hook is None
    assert quiet.kept == {T(0)}


def test_a_gone_membership_loses_its_partitions_without_committing() -> None:
    plan = before_rejoin(RebalanceProtocol.EAGER, False, OWNED, {"t"})
    assert (plan.hook, plan.commit, plan.kept) == ("on_partitions_lost", False, frozenset())
    assert before_rejoin(RebalanceProtocol.COOPERATIVE, False, set(), {"t"}).hook is None


def test_after_a_cooperative_assignment_moved_partitions_are_revoked_first() -> None:
    change = after_assignment(RebalanceProtocol.COOPERATIVE, {T(0), T(1)}, {T(1), T(2)})
    assert change.revoked == {T(0)}
    assert change.added == {T(2)}
    eager = after_assignment(RebalanceProtocol.EAGER, set(), {T(1), T(2)})
    assert (eager.revoked, eager.added) == (frozenset(), {T(1), T(2)})
