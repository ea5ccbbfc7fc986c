"""A member of a KIP-848 consumer group (``group.protocol=consumer``), without any
IO: the state half of the Java client's ConsumerMembershipManager and
ConsumerHeartbeatRequestManager.

The member joins, stays and leaves with one request, ConsumerGroupHeartbeat.
The coordinator computes every assignment; the member only applies what it is
given (*reconciling*: give up partitions no longer assigned, take the new
ones) and says so by sending the partitions it now owns. Its states:

    UNSUBSCRIBED   not in the group (before subscribe, after leaving)
    JOINING        epoch 0: the next heartbeat asks to join, with every field
    RECONCILING    the coordinator's target differs from what the member owns
    ACKNOWLEDGING  reconciled: the next heartbeat reports the owned partitions
    STABLE         owns what the coordinator wants it to own
    FENCED         the coordinator dropped the member (FENCED_MEMBER_EPOCH,
                   UNKNOWN_MEMBER_ID): its partitions are lost; once they are
                   released it joins again with epoch 0, keeping its member id
    LEAVING        a heartbeat with epoch -1 (-2: a static member that will be
                   back) is on its way
    STALE          left because poll() was not called for max.poll.interval.ms;
                   the next poll releases the partitions and joins again
    FATAL          an error no retry can cure; raised from every later call

The member id is chosen here, once per consumer (ConsumerGroupHeartbeat v1; with
v0 the coordinator chooses it). Heartbeats go every interval the coordinator
gives, at once when joining or acknowledging; how each error moves the member
follows the Java client. Time is passed in as ``now``, so that tests need no
event loop.
"""

from __future__ import annotations

import base64
import datetime
import enum
import logging
import uuid
from typing import Any, NamedTuple, NoReturn

from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i32Timedelta

from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.exceptions import CommitFailedError, FencedInstanceIdError
from kgroups.client.group_membership import NO_GENERATION, Generation
from kgroups.client.heartbeat_fields import OwnedPartitions, SentFields
from kgroups.client.subscription_state import SubscriptionState, SubscriptionType
from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "LEAVE_EPOCH",
    "LEAVE_STATIC_EPOCH",
    "ConsumerMembership",
    "MemberState",
    "SentHeartbeat",
]

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
"""A static member leaves with -2: it will be back, its partitions wait for it."""

_FENCED = (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
_COORDINATOR_MOVED = (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available)


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    LEAVING = "leaving"
    STALE = "stale"
    FATAL = "fatal"


_HEARTBEATING = (
    MemberState.JOINING,
    MemberState.RECONCILING,
    MemberState.ACKNOWLEDGING,
    MemberState.STABLE,
)
"""The states in which heartbeats keep the membership alive."""


class SentHeartbeat(NamedTuple):
    """What an answer must be matched with."""

    incarnation: int
    """An answer for an earlier incarnation (the member left or was fenced
    since) is old news."""
    acknowledges: int | None
    """The assignment version the request reported, if it reported one."""


def new_member_id() -> str:
    """A random id in the text form of Kafka's Uuid (22 URL-safe base64 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ConsumerMembership:
    commits_bound_to_generation = False
    """Commits go out under the epoch of the moment they are sent: the
    coordinator accepts them only from the current epoch anyway."""

    def __init__(
        self, config: ConsumerConfig, subscriptions: SubscriptionState, *, now: float
    ) -> None:
        assert config.group_id is not None
        self.group_id = config.group_id
        self.instance_id = config.group_instance_id
        self.subscriptions = subscriptions
        self.rebalance_timeout_ms = config.rebalance_timeout_ms
        self.rack_id = config.client_rack
        self.server_assignor = config.group_remote_assignor
        self.retry_backoff = config.retry_backoff_ms / 1000
        self.max_poll_interval = config.max_poll_interval_ms / 1000

        self.member_id = new_member_id()
        self.member_id_confirmed = False
        """Whether the coordinator knows the id (v0: it chooses it)."""
        self.epoch = 0
        self.state = MemberState.UNSUBSCRIBED
        self.target: OwnedPartitions | None = None
        """The coordinator's latest assignment for this member."""
        self.assignment: OwnedPartitions | None = None
        """What the member has reconciled (None: nothing since it joined)."""
        self.assignment_version = 0
        self.interval = 0.0
        self.in_flight = False
        self.sent = SentFields()
        self.fatal_error: KafkaError | None = None
        self.incarnation = 0
        """Bumped whenever the member is fenced or leaves: work begun for an
        earlier incarnation (a reconciliation) must not complete."""
        self._next_heartbeat = now
        self._poll_deadline = now + self.max_poll_interval

    # -- standing ------------------------------------------------------------

    def check_fatal(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error

    def fail(self, error: KafkaError) -> NoReturn:
        self._fatal(error)
        raise error

    def _fatal(self, error: KafkaError) -> None:
        log.error("group %s: member %s failed: %s", self.group_id, self.member_id, error)
        self.fatal_error = error
        self.state = MemberState.FATAL

    @property
    def generation(self) -> Generation:
        return Generation(self.epoch, self.member_id, None)

    def in_group(self) -> bool:
        return self.epoch > 0 and self.state in _HEARTBEATING

    def join(self, now: float) -> None:
        """Subscribed: join (again) with epoch 0 and every field."""
        if self.state not in (MemberState.UNSUBSCRIBED, MemberState.STALE, MemberState.FENCED):
            return
        log.info("group %s: member %s joining", self.group_id, self.member_id)
        self.state = MemberState.JOINING
        self.epoch = 0
        self.target = None
        self.assignment = None
        self.sent.reset()
        self._next_heartbeat = now

    def needs_release(self) -> bool:
        """Fenced, or left on a poll timeout: what it owns must be given up as lost."""
        return self.state in (MemberState.FENCED, MemberState.STALE)

    def reconcile_needed(self) -> bool:
        return self.state is MemberState.RECONCILING

    def on_poll(self, now: float) -> None:
        self._poll_deadline = now + self.max_poll_interval

    def poll_expired(self, now: float) -> bool:
        return self.state in _HEARTBEATING and now >= self._poll_deadline

    def time_to_poll_expiry(self, now: float) -> float:
        return self._poll_deadline - now

    # -- heartbeats ----------------------------------------------------------

    def time_to_heartbeat(self, now: float) -> float | None:
        """Seconds until the next heartbeat is due (0: now); None when there is
        none to send (one is in flight, or the member is not in the group)."""
        if self.in_flight or self.state not in _HEARTBEATING:
            return None
        return max(0.0, self._next_heartbeat - now)

    def heartbeat_request(
        self, version: int, now: float
    ) -> tuple[ConsumerGroupHeartbeatRequest, SentHeartbeat]:
        """The heartbeat to send now, and what its answer is matched with."""
        self.in_flight = True
        self._next_heartbeat = now + self.interval
        request, acknowledges = self._request(
            self.epoch, version, send_all=self.state is MemberState.JOINING
        )
        return request, SentHeartbeat(self.incarnation, acknowledges)

    def leave(self, reason: str) -> bool:
        """Start leaving; False when there is nothing to leave."""
        if self.state not in _HEARTBEATING:
            return False
        log.info("group %s: member %s leaving: %s", self.group_id, self.member_id, reason)
        self.state = MemberState.LEAVING
        self.incarnation += 1
        return True

    def leave_request(self, version: int) -> ConsumerGroupHeartbeatRequest:
        epoch = LEAVE_EPOCH if self.instance_id is None else LEAVE_STATIC_EPOCH
        return self._request(epoch, version, send_all=False)[0]

    def on_left(self, *, stale: bool = False) -> None:
        """The leave heartbeat went out (or could not): the member is out."""
        self.state = MemberState.STALE if stale else MemberState.UNSUBSCRIBED
        self.epoch = 0
        self.target = None
        self.in_flight = False

    def _request(
        self, epoch: int, version: int, *, send_all: bool
    ) -> tuple[ConsumerGroupHeartbeatRequest, int | None]:
        sent = self.sent
        subs = self.subscriptions
        names: tuple[TopicName, ...] | None = None
        regex: str | None = None
        if subs.type is SubscriptionType.AUTO_REGEX:
            if sent.changed("regex", subs.regex, send_all):
                regex = subs.regex
        elif sent.changed("topics", subs.subscription, send_all):
            names = tuple(TopicName(t) for t in sorted(subs.subscription))
        timeout = -1
        if sent.changed("rebalance_timeout", self.rebalance_timeout_ms, send_all):
            timeout = self.rebalance_timeout_ms
        rack = self.rack_id if sent.changed("rack", self.rack_id, send_all) else None
        assignor = None
        if self.server_assignor is not None and sent.changed(
            "assignor", self.server_assignor, send_all
        ):
            assignor = self.server_assignor
        owned = self.assignment or frozenset()
        acknowledges: int | None = None
        partitions: tuple[TopicPartitions, ...] | None = None
        if sent.changed("owned", (self.assignment_version, owned), send_all):
            acknowledges = self.assignment_version
            partitions = _by_topic(owned)
        member_id = self.member_id if version >= 1 or self.member_id_confirmed else ""
        request = ConsumerGroupHeartbeatRequest(
            group_id=GroupId(self.group_id),
            member_id=member_id,
            member_epoch=i32(epoch),
            instance_id=self.instance_id,
            rack_id=rack,
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout)),
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=partitions,
        )
        return request, acknowledges

    def on_heartbeat_failed(self, now: float, error: Exception) -> None:
        """No answer: nothing is known to have arrived; retry after the backoff
        (an error no retry can cure is fatal)."""
        self.in_flight = False
        self.sent.reset()
        self._next_heartbeat = now + self.retry_backoff
        if isinstance(error, KafkaError) and not error.error_code.retriable:
            if error.error_code == ErrorCode.unsupported_version:
                error = KafkaError(
                    error.error_code,
                    "the cluster does not support the consumer group protocol; "
                    "set group.protocol=classic",
                )
            self._fatal(error)

    def on_heartbeat_response(self, response: Any, sent: SentHeartbeat, now: float) -> None:
        """Meets the answer to the heartbeat ``sent``."""
        self.in_flight = False
        error = response.error_code
        if self.state not in _HEARTBEATING or sent.incarnation != self.incarnation:
            return  # sent before the member left or was fenced: old news
        if error == ErrorCode.none:
            self._on_success(response, sent.acknowledges, now)
            return
        self.sent.reset()
        self._next_heartbeat = now + self.retry_backoff
        if error in _COORDINATOR_MOVED:
            # The caller looks the coordinator up; the next heartbeat goes at once.
            self._next_heartbeat = now
        elif error == ErrorCode.coordinator_load_in_progress:
            pass
        elif error in _FENCED:
            self._fence(error, now)
        elif error == ErrorCode.fenced_instance_id:
            self._fatal(FencedInstanceIdError(self.instance_id))
        elif error == ErrorCode.unsupported_version:
            self._fatal(
                KafkaError(
                    error,
                    "the cluster does not support the consumer group protocol; "
                    "set group.protocol=classic",
                )
            )
        else:
            self._fatal(KafkaError(error, response.error_message or "ConsumerGroupHeartbeat"))

    def _on_success(self, response: Any, acknowledged: int | None, now: float) -> None:
        if response.member_id:
            self.member_id = response.member_id
        self.member_id_confirmed = True
        self.epoch = int(response.member_epoch)
        self.interval = response.heartbeat_interval.total_seconds()
        self._next_heartbeat = now + self.interval
        if response.assignment is not None:
            self.target = frozenset(
                (t.topic_id, int(p))
                for t in response.assignment.topic_partitions
                if t.topic_id is not None
                for p in t.partitions
            )
        if self.target is None:
            return  # joined, no assignment yet
        if self.target != self.assignment:
            if self.state is not MemberState.RECONCILING:
                self.state = MemberState.RECONCILING
        elif self.state is not MemberState.ACKNOWLEDGING or acknowledged == self.assignment_version:
            self.state = MemberState.STABLE
        else:
            self._next_heartbeat = now  # answered an older heartbeat: the ack is still due

    def _fence(self, error: ErrorCode, now: float) -> None:
        log.info(
            "group %s: member %s fenced in epoch %s (%s): its partitions are lost",
            self.group_id,
            self.member_id,
            self.epoch,
            error.name,
        )
        self.state = MemberState.FENCED
        self.epoch = 0
        self.target = None
        self.incarnation += 1
        if error == ErrorCode.unknown_member_id and not self.member_id_confirmed:
            self.member_id = new_member_id()
        self._next_heartbeat = now

    # -- reconciliation ------------------------------------------------------

    def on_reconciled(self, assignment: OwnedPartitions, incarnation: int, now: float) -> bool:
        """The member now owns ``assignment``; the next heartbeat (at once) says
        so. False when the member was fenced or left meanwhile."""
        if incarnation != self.incarnation or self.state is not MemberState.RECONCILING:
            return False
        self.assignment = assignment
        self.assignment_version += 1
        self.state = MemberState.ACKNOWLEDGING
        self._next_heartbeat = now
        return True

    def on_released(self) -> None:
        """The partitions of a fenced or stale member were given up."""
        self.assignment = None

    # -- commits (OffsetCommitter's CommitterMembership) ----------------------

    def generation_for_new_commit(self) -> Generation:
        if not self.subscriptions.partitions_auto_assigned():
            return NO_GENERATION
        return self.generation

    def generation_for_commit(self) -> Generation:
        if not self.subscriptions.partitions_auto_assigned():
            return NO_GENERATION
        if not self.in_group():
            raise CommitFailedError(ErrorCode.unknown_member_id)
        return self.generation

    def fetch_identity(self) -> tuple[str | None, int]:
        """Member id and epoch for OffsetFetch v9 (None, -1 outside the group)."""
        if self.subscriptions.partitions_auto_assigned() and self.in_group():
            return self.member_id, self.epoch
        return None, -1

    def request_rejoin(self, reason: str) -> None:
        log.info("group %s: %s (the heartbeat keeps the member current)", self.group_id, reason)

    def reset_generation_on_error(self, error: ErrorCode, sent: Generation) -> None:
        """A commit made in ``sent`` was refused. UNKNOWN_MEMBER_ID under the
        epoch the member still holds: the coordinator fenced it (its session
        ran out while its heartbeats could not get through, say), so its
        partitions are another member's already. It gives them up now, as
        lost, rather than when its own heartbeat next gets an answer. Else the
        next heartbeat, at once, says where the member stands."""
        if (
            error == ErrorCode.unknown_member_id
            and self.in_group()
            and sent.generation_id == self.epoch
            and sent.member_id == self.member_id
        ):
            self._fence(error, 0.0)
            return
        self._next_heartbeat = 0.0


def _by_topic(owned: OwnedPartitions) -> tuple[TopicPartitions, ...]:
    topics: dict[uuid.UUID, list[int]] = {}
    for topic_id, partition in sorted(owned):
        topics.setdefault(topic_id, []).append(partition)
    return tuple(
        TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in ps))
        for t, ps in topics.items()
    )
