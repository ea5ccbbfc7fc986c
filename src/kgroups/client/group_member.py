"""A consumer's membership of its group, without any IO (the state half of the
Java client's AbstractCoordinator).

``GroupMember`` holds what the member knows -- its generation and member id,
where it is in a rebalance, whether it must rejoin, its heartbeat clocks, a
fatal error -- and decides what to send next and how to meet each answer. It
builds the JoinGroup, SyncGroup, Heartbeat and LeaveGroup requests and reads
their responses; ``ConsumerCoordinator`` sends them and waits. Time is always
passed in as ``now``, so its tests need no event loop and no sleeps.

How answers move the member, as in Java:

- JoinGroup: MEMBER_ID_REQUIRED takes the id the coordinator chose and joins
  again at once (KIP-394); REBALANCE_IN_PROGRESS joins again; UNKNOWN_MEMBER_ID
  forgets the member id, ILLEGAL_GENERATION only the generation; a moved or
  loading coordinator is retried after the backoff; the errors no retry can
  cure (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, ...) are fatal.
- SyncGroup: any error asks for a rejoin; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION
  also reset the generation; FENCED_INSTANCE_ID and unexpected errors are fatal.
- Heartbeat: REBALANCE_IN_PROGRESS asks a stable member to rejoin (and proves
  the coordinator alive); UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION reset the
  generation; FENCED_INSTANCE_ID is fatal; others make the next one come sooner.

An error about a generation the member has since left behind is ignored: the
member has already moved on.
"""

from __future__ import annotations

import datetime
import enum
import logging
from typing import Any, NoReturn

from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.leave_group.v5 import LeaveGroupRequest
from kio.schema.leave_group.v5.request import MemberIdentity
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment
from kio.schema.types import GroupId
from kio.static.primitive import i32, i32Timedelta

from kgroups.assignors.base import Assignor, RebalanceProtocol
from kgroups.assignors.protocol import Subscription, encode_subscription
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.exceptions import (
    CommitFailedError,
    FencedInstanceIdError,
    RebalanceInProgressError,
    RetriableError,
)
from kgroups.client.group_membership import NO_GENERATION, Generation, MemberState
from kgroups.client.heartbeat_timer import HeartbeatTimer
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["PROTOCOL_TYPE", "REJOIN_NOW", "GroupMember", "HeartbeatStep", "coordinator_moved"]

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"

REJOIN_NOW = (
    ErrorCode.member_id_required,
    ErrorCode.rebalance_in_progress,
    ErrorCode.unknown_member_id,
    ErrorCode.illegal_generation,
)
"""JoinGroup / SyncGroup answers after which the member joins again at once."""

_FATAL_JOIN = (
    ErrorCode.inconsistent_group_protocol,
    ErrorCode.invalid_session_timeout,
    ErrorCode.invalid_group_id,
    ErrorCode.group_authorization_failed,
    ErrorCode.group_max_size_reached,
    ErrorCode.unsupported_version,
)
_COORDINATOR_MOVED = (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available)


def coordinator_moved(error: ErrorCode) -> bool:
    """The answer says the coordinator is elsewhere: it must be looked up again."""
    return error in _COORDINATOR_MOVED


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class HeartbeatStep(enum.Enum):
    """What the heartbeat task does next."""

    STOP = "stop"
    """A fatal error: the member is done."""
    AWAIT_JOIN = "await-join"
    """Not in the group: nothing to heartbeat until a JoinGroup succeeds."""
    FIND_COORDINATOR = "find-coordinator"
    SESSION_EXPIRED = "session-expired"
    """No answer for session.timeout.ms: the coordinator is surely lost."""
    POLL_EXPIRED = "poll-expired"
    """No poll() for max.poll.interval.ms: leave, so others take the partitions."""
    SEND = "send"
    WAIT = "wait"


class GroupMember:
    commits_bound_to_generation = True

    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        assignors: list[Assignor],
        protocol: RebalanceProtocol,
        *,
        now: float,
    ) -> None:
        assert config.group_id is not None
        self.config = config
        self.group_id = config.group_id
        self.instance_id = config.group_instance_id
        self.subscriptions = subscriptions
        self.assignors = assignors
        self.protocol = protocol
        self.retry_backoff = config.retry_backoff_ms / 1000

        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "the consumer starts"
        self.needs_join_prepare = True
        self.is_leader = False
        self.joined_subscription: frozenset[str] = frozenset()
        self.heartbeat = HeartbeatTimer(
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            now=now,
        )
        self.fatal_error: KafkaError | None = None

    # -- standing ------------------------------------------------------------

    def check_fatal(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error

    def fail(self, error: KafkaError) -> NoReturn:
        """Remember an error no retry can cure (raised from every later call)."""
        self.fatal_error = error
        raise error

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: request rejoin: %s", self.group_id, reason)
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def rejoin_needed_or_pending(self, join_running: bool) -> bool:
        if not self.subscriptions.partitions_auto_assigned():
            return False
        if self.joined_subscription != self.subscriptions.subscription:
            # The subscription changed since we joined: the group must hear of it.
            self.request_rejoin("the subscription changed")
        return self.rejoin_needed or join_running

    def membership_stands(self) -> bool:
        """Whether the member still has a generation and an id (else what it owns is lost)."""
        return self.generation.generation_id >= 0 and self.generation.has_member_id

    def may_consume_during_rebalance(self) -> bool:
        """Under COOPERATIVE a member keeps consuming what it owns while it rejoins
        (KIP-429) -- as long as its membership still stands."""
        return (
            self.protocol is RebalanceProtocol.COOPERATIVE
            and self.membership_stands()
            and self.fatal_error is None
        )

    def generation_if_stable(self) -> Generation | None:
        return self.generation if self.state is MemberState.STABLE else None

    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    def reset_state_and_generation(self, reason: str, *, forget_member_id: bool) -> None:
        log.info("group %s: resetting generation: %s", self.group_id, reason)
        self.state = MemberState.UNJOINED
        if forget_member_id:
            self.generation = NO_GENERATION
        else:
            # The member id may still be good; keeping it spares the group a wait
            # for the old id to time out in the next rebalance.
            self.generation = Generation(-1, self.generation.member_id, None)

    def reset_generation_on_error(self, error: ErrorCode, sent: Generation) -> None:
        """UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION / FENCED_INSTANCE_ID for the
        generation a request was sent in; ignored when a newer one came since."""
        if self.generation != sent:
            log.info("group %s: ignoring %s for old generation %s", self.group_id, error, sent)
            return
        reason = f"{error.name} in generation {sent.generation_id}"
        self.reset_state_and_generation(
            reason, forget_member_id=error == ErrorCode.unknown_member_id
        )
        self.request_rejoin(reason)

    def generation_for_new_commit(self) -> Generation:
        """The generation a commit made now is bound to, whatever happens before it
        is sent: a retry after a rejoin must fail, not overwrite the new owner."""
        if not self.subscriptions.partitions_auto_assigned():
            return NO_GENERATION
        return self.generation

    def fetch_identity(self) -> tuple[str | None, int]:
        return None, -1  # OffsetFetch v9's member fields are for consumer groups

    def generation_for_commit(self) -> Generation:
        if not self.subscriptions.partitions_auto_assigned():
            return NO_GENERATION
        generation = self.generation_if_stable()
        if generation is None:
            if self.rebalance_in_progress():
                raise RebalanceInProgressError()
            raise CommitFailedError(ErrorCode.unknown_member_id)
        return generation

    # -- JoinGroup -----------------------------------------------------------

    def join_request(self) -> JoinGroupRequest:
        """Starts a join: one subscription per offered assignor, in preference order."""
        self.state = MemberState.PREPARING_REBALANCE
        log.info("group %s: (re-)joining: %s", self.group_id, self.rejoin_reason)
        topics = self.subscriptions.subscription
        self.joined_subscription = topics
        owned = sorted(self.subscriptions.assigned_partitions())
        protocols = tuple(
            JoinGroupRequestProtocol(
                name=assignor.name,
                metadata=encode_subscription(
                    Subscription(
                        topics=sorted(topics),
                        user_data=assignor.subscription_user_data(set(topics)),
                        owned_partitions=owned,
                        generation_id=self.generation.generation_id,
                        rack_id=self.config.client_rack,
                    )
                ),
            )
            for assignor in self.assignors
        )
        return JoinGroupRequest(
            group_id=GroupId(self.group_id),
            session_timeout=_ms(self.config.session_timeout_ms),
            rebalance_timeout=_ms(self.config.rebalance_timeout_ms),
            member_id=self.generation.member_id,
            group_instance_id=self.instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=protocols,
            reason=self.rejoin_reason,
        )

    def on_join_response(self, response: Any, now: float) -> bool:
        """Takes the generation a JoinGroup gave; True when this member leads it.
        Errors are raised: RetriableError to retry after the backoff, a KafkaError
        of REJOIN_NOW to join again at once, anything else is fatal."""
        error = response.error_code
        if error == ErrorCode.none:
            if response.protocol_type not in (None, PROTOCOL_TYPE):
                raise KafkaError(ErrorCode.inconsistent_group_protocol, "not a consumer group")
            if self.state is not MemberState.PREPARING_REBALANCE:
                raise RetriableError(ErrorCode.unknown_member_id, "left the group while joining")
            self.state = MemberState.COMPLETING_REBALANCE
            self.generation = Generation(
                response.generation_id, response.member_id, response.protocol_name
            )
            self.heartbeat.reset(now)
            leader = bool(response.leader == response.member_id)
            log.info(
                "group %s: joined generation %s as %s (%s)",
                self.group_id,
                response.generation_id,
                response.member_id,
                "leader" if leader else "follower",
            )
            if not leader:
                self.is_leader = False
            return leader
        if error == ErrorCode.member_id_required:
            # KIP-394: the coordinator chose our id; join again with it.
            self.generation = Generation(-1, response.member_id, None)
        elif error == ErrorCode.unknown_member_id:
            self.reset_state_and_generation(
                "UNKNOWN_MEMBER_ID from JoinGroup", forget_member_id=True
            )
        elif error == ErrorCode.illegal_generation:
            self.reset_state_and_generation(
                "ILLEGAL_GENERATION from JoinGroup", forget_member_id=False
            )
        elif coordinator_moved(error) or error == ErrorCode.coordinator_load_in_progress:
            raise RetriableError(error, "JoinGroup")
        elif error == ErrorCode.fenced_instance_id:
            self.fail(FencedInstanceIdError(self.instance_id))
        elif error in _FATAL_JOIN:
            self.fail(KafkaError(error, f"JoinGroup failed for group {self.group_id!r}"))
        if error in REJOIN_NOW:
            raise KafkaError(error, "JoinGroup")
        if error.retriable:
            raise RetriableError(error, "JoinGroup")
        self.fail(KafkaError(error, f"unexpected JoinGroup error {error.name}"))

    def on_join_failed(self) -> None:
        """A join round failed in a way that calls for another one."""
        if self.state is not MemberState.STABLE:
            self.state = MemberState.UNJOINED
        self.rejoin_needed = True

    # -- SyncGroup -----------------------------------------------------------

    def sync_request(
        self, assignments: tuple[SyncGroupRequestAssignment, ...]
    ) -> tuple[SyncGroupRequest, Generation]:
        """The SyncGroup for the generation just joined, and that generation."""
        sent = self.generation
        request = SyncGroupRequest(
            group_id=GroupId(self.group_id),
            generation_id=i32(sent.generation_id),
            member_id=sent.member_id,
            group_instance_id=self.instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=sent.protocol_name,
            assignments=assignments,
        )
        return request, sent

    def on_sync_response(self, response: Any, sent: Generation) -> bytes:
        """This member's assignment bytes; the member is then STABLE. Errors are
        raised as in on_join_response."""
        error = response.error_code
        if error == ErrorCode.none:
            if response.protocol_type not in (None, PROTOCOL_TYPE) or (
                response.protocol_name not in (None, sent.protocol_name)
            ):
                raise KafkaError(ErrorCode.inconsistent_group_protocol, "SyncGroup protocol")
            if self.generation != sent or self.state is not MemberState.COMPLETING_REBALANCE:
                raise KafkaError(ErrorCode.illegal_generation, "generation reset during SyncGroup")
            self.state = MemberState.STABLE
            self.rejoin_needed = False
            return bytes(response.assignment)
        self.request_rejoin(f"{error.name} from SyncGroup")
        if error == ErrorCode.fenced_instance_id:
            self.fail(FencedInstanceIdError(self.instance_id))
        if error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            self.reset_generation_on_error(error, sent)
            raise KafkaError(error, "SyncGroup")
        if error == ErrorCode.rebalance_in_progress:
            raise KafkaError(error, "SyncGroup")
        if error.retriable:
            raise RetriableError(error, "SyncGroup")
        self.fail(KafkaError(error, f"SyncGroup failed for group {self.group_id!r}"))

    def joined_generation_intact(self) -> bool:
        """After SyncGroup: False when a heartbeat answer reset the generation
        meanwhile, so the assignment must not be installed."""
        if self.generation.generation_id >= 0 and self.state is MemberState.STABLE:
            return True
        log.info("group %s: generation reset during the rebalance, retrying", self.group_id)
        self.state = MemberState.UNJOINED
        self.request_rejoin("the generation was reset during the rebalance")
        return False

    # -- Heartbeat -----------------------------------------------------------

    def heartbeat_step(self, now: float, coordinator_known: bool) -> tuple[HeartbeatStep, float]:
        """What the heartbeat task does now, and how long it may then sleep
        (it is woken sooner when a join succeeds or a heartbeat fails)."""
        if self.fatal_error is not None:
            return HeartbeatStep.STOP, 0.0
        timer = self.heartbeat
        if self.state.has_not_joined:
            return HeartbeatStep.AWAIT_JOIN, 1.0
        if not coordinator_known:
            return HeartbeatStep.FIND_COORDINATOR, self.retry_backoff
        if timer.session_expired(now):
            timer.reset_session(now)
            return HeartbeatStep.SESSION_EXPIRED, 0.0
        if timer.poll_expired(now):
            return HeartbeatStep.POLL_EXPIRED, 0.0
        if timer.should_heartbeat(now):
            timer.sent(now)
            return HeartbeatStep.SEND, timer.interval
        wait = min(
            timer.time_to_next_heartbeat(now),
            timer.time_to_poll_expiry(now) + 0.001,
            max(0.0, timer.session_timeout),
        )
        return HeartbeatStep.WAIT, wait

    def heartbeat_request(self) -> tuple[HeartbeatRequest, Generation]:
        sent = self.generation
        request = HeartbeatRequest(
            group_id=GroupId(self.group_id),
            generation_id=i32(sent.generation_id),
            member_id=sent.member_id,
            group_instance_id=self.instance_id,
        )
        return request, sent

    def on_heartbeat_failed(self, now: float) -> None:
        """No answer (connection lost, timeout): try again after the backoff."""
        self.heartbeat.failed(now)

    def on_heartbeat_response(self, error: ErrorCode, sent: Generation, now: float) -> bool:
        """Meets a Heartbeat answer; True when the heartbeat task should look
        again at once (an error makes the next heartbeat come sooner)."""
        if error == ErrorCode.none:
            self.heartbeat.received(now)
            return False
        if error == ErrorCode.rebalance_in_progress:
            # The coordinator is alive: it counts as an answer.
            self.heartbeat.received(now)
            if self.state is MemberState.STABLE:
                self.request_rejoin("the group is rebalancing (Heartbeat)")
            return False
        self.heartbeat.failed(now)
        if coordinator_moved(error) or error == ErrorCode.coordinator_load_in_progress:
            pass  # the caller looks the coordinator up again if it moved
        elif error == ErrorCode.fenced_instance_id:
            log.error("group %s: group.instance.id %s fenced", self.group_id, self.instance_id)
            if self.generation == sent:
                self.fatal_error = FencedInstanceIdError(self.instance_id)
        elif error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            self.reset_generation_on_error(error, sent)
        else:
            log.warning("group %s: unexpected heartbeat error %s", self.group_id, error)
        return True

    # -- LeaveGroup ----------------------------------------------------------

    def leave_request(self, reason: str, coordinator_known: bool) -> LeaveGroupRequest | None:
        """The LeaveGroup to send, if any: only a dynamic member in the group
        leaves (the coordinator keeps a static member until its session times out)."""
        if (
            self.instance_id is not None
            or not coordinator_known
            or self.state is MemberState.UNJOINED
            or not self.generation.has_member_id
        ):
            return None
        log.info("group %s: leaving: %s", self.group_id, reason)
        return LeaveGroupRequest(
            group_id=GroupId(self.group_id),
            members=(
                MemberIdentity(
                    member_id=self.generation.member_id, group_instance_id=None, reason=reason
                ),
            ),
        )

    def on_left(self, reason: str) -> None:
        self.reset_state_and_generation(f"left the group: {reason}", forget_member_id=True)
        self.request_rejoin(reason)
