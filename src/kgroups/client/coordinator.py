"""The consumer's side of the group protocol (the Java client's ConsumerCoordinator
on top of AbstractCoordinator).

Theory of operation
-------------------
``poll()`` drives membership: it makes sure a coordinator is known
(``CoordinatorLink``), and while a rejoin is needed it runs one join task:

1. *join prepare* -- commit consumed offsets if auto-commit is on, then give up
   partitions: all of them under EAGER (``on_partitions_revoked``), only those no
   longer subscribed under COOPERATIVE, or all of them as *lost* when the
   membership is already gone (``on_partitions_lost``);
2. *JoinGroup* with a subscription per offered assignor (topics, owned
   partitions, generation, rack). A new dynamic member first gets
   MEMBER_ID_REQUIRED and rejoins at once with the id the coordinator chose
   (KIP-394), so that a member lost mid-join is never counted twice;
3. the leader decodes every member's subscription, refreshes metadata for all
   their topics and runs the chosen assignor; followers have nothing to do;
4. *SyncGroup* -- the leader sends every assignment, each member receives its own;
5. *join complete* -- under COOPERATIVE, partitions the new assignment no longer
   holds are revoked (after committing their offsets) and a follow-up rebalance
   is requested, in which they reach their new owner; then the assignment is
   installed and ``on_partitions_assigned`` gets the partitions that are new.

A heartbeat task, independent of poll, keeps the membership alive once joined.
Its errors move the member the way Java's do: REBALANCE_IN_PROGRESS asks for a
rejoin; ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID reset the generation (only
UNKNOWN_MEMBER_ID forgets the member id) and ask for a rejoin;
FENCED_INSTANCE_ID is fatal and raised from the next call; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE and lost connections rediscover the coordinator. When
the application has not polled for ``max.poll.interval.ms`` the task leaves
the group (a static member just forgets its generation: only its session
timeout ends a static membership).

Everything runs on one event loop; interleaving happens only at ``await``, so
responses re-check the state they were sent in before acting on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Mapping
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
from kgroups.assignors.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroups.client.assignor_choice import common_rebalance_protocol, make_assignors
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.cooperative_assignment import withhold_moving_partitions
from kgroups.client.coordinator_link import CoordinatorLink, GroupCluster
from kgroups.client.exceptions import (
    CommitFailedError,
    FencedInstanceIdError,
    RebalanceInProgressError,
    RetriableError,
)
from kgroups.client.group_membership import NO_GENERATION, Generation, MemberState
from kgroups.client.heartbeat_timer import HeartbeatTimer
from kgroups.client.offset_committer import OffsetCommitter
from kgroups.client.rebalance_listener import invoke_listener
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["ConsumerCoordinator"]

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"
# Extra time granted to a JoinGroup beyond the rebalance timeout, as in Java.
_JOIN_GRACE = 5.0

# JoinGroup answers after which the member joins again at once.
_REJOIN_NOW = (
    ErrorCode.member_id_required,
    ErrorCode.rebalance_in_progress,
    ErrorCode.unknown_member_id,
    ErrorCode.illegal_generation,
)
_FATAL_JOIN = (
    ErrorCode.inconsistent_group_protocol,
    ErrorCode.invalid_session_timeout,
    ErrorCode.invalid_group_id,
    ErrorCode.group_authorization_failed,
    ErrorCode.group_max_size_reached,
    ErrorCode.unsupported_version,
)
_REDISCOVER = (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available)


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class ConsumerCoordinator:
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        cluster: GroupCluster,
        link: CoordinatorLink,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        assert config.group_id is not None
        self.config = config
        self.group_id = config.group_id
        self.instance_id = config.group_instance_id
        self.subscriptions = subscriptions
        self.cluster = cluster
        self.link = link
        self._clock = clock
        self.assignors: list[Assignor] = make_assignors(config.partition_assignment_strategy)
        self.protocol = common_rebalance_protocol(self.assignors)
        self.request_timeout = config.request_timeout_ms / 1000
        self.retry_backoff = config.retry_backoff_ms / 1000
        self.join_timeout = max(
            self.request_timeout, config.rebalance_timeout_ms / 1000 + _JOIN_GRACE
        )

        self.generation = NO_GENERATION
        self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.rejoin_reason = "the consumer starts"
        self.needs_join_prepare = True
        self.is_leader = False
        self.joined_subscription: frozenset[str] = frozenset()
        self.assignment_snapshot: dict[str, int] | None = None
        """Partition counts the leader assigned from; a change means rebalance."""
        self.heartbeat = HeartbeatTimer(
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            now=clock(),
        )
        self.link.on_discovered = lambda: self.heartbeat.reset_session(self._clock())
        self.committer = OffsetCommitter(
            link,
            self,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            require_stable=config.isolation_level == "read_committed",
            clock=clock,
        )
        self.fatal_error: KafkaError | None = None
        self.listener_errors: list[Exception] = []
        """Exceptions from rebalance hooks, raised from the next poll."""

        self._join_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._heartbeat_wakeup = asyncio.Event()
        self._auto_commit_task: asyncio.Task[None] | None = None
        self._next_auto_commit = clock() + config.auto_commit_interval_ms / 1000
        self._closed = False

    # -- state helpers -------------------------------------------------------

    def check_fatal(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: request rejoin: %s", self.group_id, reason)
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def rejoin_needed_or_pending(self) -> bool:
        if not self.subscriptions.partitions_auto_assigned():
            return False
        if self.joined_subscription != self.subscriptions.subscription:
            # The subscription changed since we joined: the group must hear of it.
            self.request_rejoin("the subscription changed")
        return self.rejoin_needed or self._join_task is not None

    def may_consume_during_rebalance(self) -> bool:
        """Under COOPERATIVE a member keeps consuming what it owns while it rejoins
        (KIP-429) -- as long as its membership still stands."""
        return (
            self.protocol is RebalanceProtocol.COOPERATIVE
            and self.generation.generation_id >= 0
            and self.generation.has_member_id
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

    def generation_for_commit(self) -> Generation:
        if not self.subscriptions.partitions_auto_assigned():
            return NO_GENERATION
        generation = self.generation_if_stable()
        if generation is None:
            if self.rebalance_in_progress():
                raise RebalanceInProgressError()
            raise CommitFailedError(ErrorCode.unknown_member_id)
        return generation

    # -- poll ----------------------------------------------------------------

    async def poll(self, deadline: float | None) -> bool:
        """One step of group upkeep: coordinator, membership, auto-commit.
        False when the deadline passed before the member is in the group."""
        self.check_fatal()
        now = self._clock()
        if self.subscriptions.partitions_auto_assigned():
            # Counts even when the coordinator is unreachable, so that a member
            # waiting for one is not considered stuck in its processing.
            self.heartbeat.poll(now)
            if not await self.link.ensure_ready(deadline):
                return False
            self._start_heartbeat()
            if self.rejoin_needed_or_pending() and not await self._ensure_active_group(deadline):
                return False
        elif self.config.enable_auto_commit and self.link.unknown():
            # Manually assigned partitions still auto-commit: start finding the
            # coordinator without waiting for it.
            await self.link.ensure_ready(now)
        self.raise_listener_errors()
        self.maybe_auto_commit_async(self._clock())
        return True

    def raise_listener_errors(self) -> None:
        if self.listener_errors:
            error, self.listener_errors = self.listener_errors[0], []
            raise error

    async def _ensure_active_group(self, deadline: float | None) -> bool:
        if self._join_task is None:
            self._join_task = asyncio.get_running_loop().create_task(self._join_group_if_needed())
        task = self._join_task
        remaining = None if deadline is None else max(0.0, deadline - self._clock())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), remaining)
        if not task.done():
            return False
        self._join_task = None
        task.result()  # a fatal error of the join surfaces here
        return not self.rejoin_needed

    # -- joining -------------------------------------------------------------

    async def _join_group_if_needed(self) -> None:
        while self.rejoin_needed and not self._closed:
            self.check_fatal()
            await self.link.ensure_ready(None)
            if self.needs_join_prepare:
                # Cleared first: if a hook raises, the retry must not run it twice.
                self.needs_join_prepare = False
                await self._on_join_prepare(self.generation)
            try:
                assignment = await self._join_and_sync()
            except RetriableError as e:
                log.info("group %s: rebalance failed, retrying: %s", self.group_id, e)
                if self.state is not MemberState.STABLE:
                    self.state = MemberState.UNJOINED
                self.rejoin_needed = True
                await asyncio.sleep(self.retry_backoff)
                continue
            except KafkaError as e:
                if e.error_code in _REJOIN_NOW:
                    if self.state is not MemberState.STABLE:
                        self.state = MemberState.UNJOINED
                    self.rejoin_needed = True
                    continue
                raise
            generation = self.generation
            if generation.generation_id >= 0 and self.state is MemberState.STABLE:
                await self._on_join_complete(generation, assignment)
                self.needs_join_prepare = True
            else:
                # The heartbeat task reset the generation while we synced.
                log.info("group %s: generation reset during the rebalance, retrying", self.group_id)
                self.state = MemberState.UNJOINED
                self.request_rejoin("the generation was reset during the rebalance")

    def _join_request(self) -> JoinGroupRequest:
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

    async def _join_and_sync(self) -> bytes:
        """JoinGroup then SyncGroup; returns this member's assignment bytes."""
        self.state = MemberState.PREPARING_REBALANCE
        log.info("group %s: (re-)joining: %s", self.group_id, self.rejoin_reason)
        response = await self.link.send(
            self._join_request(), apis.JOIN_GROUP, 5, 9, timeout=self.join_timeout
        )
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
            self.heartbeat.reset(self._clock())
            self._heartbeat_wakeup.set()
            log.info(
                "group %s: joined generation %s as %s (%s)",
                self.group_id,
                response.generation_id,
                response.member_id,
                "leader" if response.leader == response.member_id else "follower",
            )
            if response.leader == response.member_id:
                assignments = await self._on_join_leader(response)
            else:
                self.is_leader = False
                assignments = ()
            return await self._sync(assignments)
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
        elif error in _REDISCOVER:
            self.link.mark_unknown(f"{error.name} from JoinGroup")
            raise RetriableError(error, "JoinGroup")
        elif error == ErrorCode.coordinator_load_in_progress:
            raise RetriableError(error, "JoinGroup")
        elif error == ErrorCode.fenced_instance_id:
            self._fail(FencedInstanceIdError(self.instance_id))
        elif error in _FATAL_JOIN:
            self._fail(KafkaError(error, f"JoinGroup failed for group {self.group_id!r}"))
        if error in _REJOIN_NOW:
            raise KafkaError(error, "JoinGroup")
        if error.retriable:
            raise RetriableError(error, "JoinGroup")
        self._fail(KafkaError(error, f"unexpected JoinGroup error {error.name}"))

    def _fail(self, error: KafkaError) -> NoReturn:
        self.fatal_error = error
        raise error

    async def _on_join_leader(self, response: Any) -> tuple[SyncGroupRequestAssignment, ...]:
        assignor = self._assignor(response.protocol_name)
        subscriptions: dict[str, Subscription] = {}
        for member in response.members:
            subscription = decode_subscription(bytes(member.metadata))
            subscription.group_instance_id = member.group_instance_id
            subscriptions[member.member_id] = subscription
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        # The leader watches every topic of the group, to see partition changes.
        self.subscriptions.group_subscribe(topics)
        try:
            await self.cluster.refresh(topics)
        except OSError as e:
            raise RetriableError(ErrorCode.network_exception, f"metadata refresh: {e}") from e
        counts = self.partition_counts(topics)
        self.assignment_snapshot = counts
        self.is_leader = True
        assignments = assignor.assign(counts, subscriptions)
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            assignments = withhold_moving_partitions(assignments, subscriptions)
        log.info(
            "group %s: leader assigned with %s: %s",
            self.group_id,
            assignor.name,
            {m: sorted(a.partitions) for m, a in assignments.items()},
        )
        return tuple(
            SyncGroupRequestAssignment(member_id=member_id, assignment=encode_assignment(a))
            for member_id, a in assignments.items()
        )

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for topic in topics:
            info = self.cluster.metadata.topics.get(topic)
            if info is not None and info.error == ErrorCode.none and info.partitions:
                counts[topic] = len(info.partitions)
        return counts

    def _assignor(self, name: str | None) -> Assignor:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"the coordinator chose assignor {name!r}, which this member does not offer",
        )

    async def _sync(self, assignments: tuple[SyncGroupRequestAssignment, ...]) -> bytes:
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
        response = await self.link.send(request, apis.SYNC_GROUP, 3, 5, timeout=self.join_timeout)
        error = response.error_code
        if error == ErrorCode.none:
            if response.protocol_type not in (
                None,
                PROTOCOL_TYPE,
            ) or response.protocol_name not in (
                None,
                sent.protocol_name,
            ):
                raise KafkaError(ErrorCode.inconsistent_group_protocol, "SyncGroup protocol")
            if self.generation != sent or self.state is not MemberState.COMPLETING_REBALANCE:
                raise KafkaError(ErrorCode.illegal_generation, "generation reset during SyncGroup")
            self.state = MemberState.STABLE
            self.rejoin_needed = False
            return bytes(response.assignment)
        self.request_rejoin(f"{error.name} from SyncGroup")
        if error == ErrorCode.fenced_instance_id:
            self._fail(FencedInstanceIdError(self.instance_id))
        if error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            self.reset_generation_on_error(error, sent)
            raise KafkaError(error, "SyncGroup")
        if error == ErrorCode.rebalance_in_progress:
            raise KafkaError(error, "SyncGroup")
        if error in _REDISCOVER:
            self.link.mark_unknown(f"{error.name} from SyncGroup")
            raise RetriableError(error, "SyncGroup")
        if error.retriable:
            raise RetriableError(error, "SyncGroup")
        self._fail(KafkaError(error, f"SyncGroup failed for group {self.group_id!r}"))

    async def _on_join_prepare(self, generation: Generation) -> None:
        owned = self.subscriptions.assigned_partitions()
        lost = generation.generation_id < 0 or not generation.has_member_id
        if lost:
            if owned:
                log.info("group %s: partitions lost: %s", self.group_id, sorted(owned))
                await self._invoke("on_partitions_lost", owned)
                self.subscriptions.assign_from_subscribed(())
        elif self.protocol is RebalanceProtocol.EAGER:
            self.subscriptions.mark_pending_revocation(owned)
            await self.maybe_auto_commit_sync(self.config.rebalance_timeout_ms / 1000)
            log.info("group %s: revoking %s", self.group_id, sorted(owned))
            await self._invoke("on_partitions_revoked", owned)
            self.subscriptions.assign_from_subscribed(())
        else:
            # Cooperative members keep what they own while they rejoin; only
            # partitions of topics no longer subscribed are given up now.
            unsubscribed = {tp for tp in owned if tp.topic not in self.subscriptions.subscription}
            self.subscriptions.mark_pending_revocation(unsubscribed)
            await self.maybe_auto_commit_sync(self.config.rebalance_timeout_ms / 1000)
            if unsubscribed:
                await self._invoke("on_partitions_revoked", unsubscribed)
                self.subscriptions.assign_from_subscribed(owned - unsubscribed)
        self.is_leader = False
        self.subscriptions.reset_group_subscription()

    async def _on_join_complete(self, generation: Generation, assignment_bytes: bytes) -> None:
        if not self.is_leader:
            self.assignment_snapshot = None
        assignor = self._assignor(generation.protocol_name)
        assignment = decode_assignment(assignment_bytes) if assignment_bytes else Assignment([])
        assigned = set(assignment.partitions)
        if not self.subscriptions.assignment_matches_subscription(assigned):
            log.warning(
                "group %s: assignment %s does not match the subscription",
                self.group_id,
                sorted(assigned),
            )
            self.request_rejoin("the assignment does not match the subscription")
            return
        owned = self.subscriptions.assigned_partitions()
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
            if revoked:
                # Commit before giving them up, so that their next owner starts
                # exactly where we stopped.
                self.subscriptions.mark_pending_revocation(revoked)
                await self.maybe_auto_commit_sync(
                    self.config.rebalance_timeout_ms / 1000,
                    {
                        tp: om
                        for tp, om in self.subscriptions.all_consumed().items()
                        if tp in revoked
                    },
                )
                log.info("group %s: revoking %s", self.group_id, sorted(revoked))
                await self._invoke("on_partitions_revoked", revoked)
                self.request_rejoin(f"partitions {sorted(revoked)} were revoked")
        assignor.on_assignment(assignment, generation.generation_id)
        self._next_auto_commit = self._clock() + self.config.auto_commit_interval_ms / 1000
        self.subscriptions.assign_from_subscribed(assigned)
        added = assigned - owned
        log.info(
            "group %s: generation %s assigned %s (new: %s)",
            self.group_id,
            generation.generation_id,
            sorted(assigned),
            sorted(added),
        )
        await self._invoke("on_partitions_assigned", added)

    async def _invoke(self, hook: str, partitions: set[TopicPartition]) -> None:
        error = await invoke_listener(self.subscriptions.listener, hook, partitions)
        if error is not None:
            self.listener_errors.append(error)

    async def on_leave_prepare(self) -> None:
        """Before leaving (close, unsubscribe): revoke, or report lost, what we own."""
        owned = self.subscriptions.assigned_partitions()
        if owned and self.subscriptions.partitions_auto_assigned():
            lost = self.generation.generation_id < 0 or not self.generation.has_member_id
            await self._invoke("on_partitions_lost" if lost else "on_partitions_revoked", owned)
            self.subscriptions.assign_from_subscribed(())

    # -- heartbeats ----------------------------------------------------------

    def _start_heartbeat(self) -> None:
        if self._heartbeat_task is None and not self._closed:
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    async def _heartbeat_loop(self) -> None:
        in_flight: asyncio.Task[None] | None = None
        while not self._closed:
            self._heartbeat_wakeup.clear()
            now = self._clock()
            wait = self.retry_backoff
            if self.fatal_error is not None:
                return
            if self.state.has_not_joined:
                wait = 1.0  # woken when a JoinGroup succeeds
            elif self.link.unknown():
                found = False
                with contextlib.suppress(KafkaError):
                    found = await self.link.ensure_ready(now + self.retry_backoff)
                if not found:
                    await asyncio.sleep(self.retry_backoff)
                continue
            elif self.heartbeat.session_expired(now):
                self.link.mark_unknown("session timed out without a heartbeat response")
                self.heartbeat.reset_session(now)
                continue
            elif self.heartbeat.poll_expired(now):
                log.warning(
                    "group %s: max.poll.interval.ms (%s) passed without a poll; leaving the "
                    "group. Process less per poll (max.poll.records) or allow more time.",
                    self.group_id,
                    self.config.max_poll_interval_ms,
                )
                await self.maybe_leave_group("consumer poll timeout has expired")
                continue
            elif self.heartbeat.should_heartbeat(now):
                self.heartbeat.sent(now)
                in_flight = asyncio.get_running_loop().create_task(self._send_heartbeat())
                wait = self.heartbeat.interval
            else:
                wait = min(
                    self.heartbeat.time_to_next_heartbeat(now),
                    self.heartbeat.time_to_poll_expiry(now) + 0.001,
                    max(0.0, self.heartbeat.session_timeout),
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._heartbeat_wakeup.wait(), max(wait, 0.001))
        if in_flight is not None:
            in_flight.cancel()

    async def _send_heartbeat(self) -> None:
        sent = self.generation
        request = HeartbeatRequest(
            group_id=GroupId(self.group_id),
            generation_id=i32(sent.generation_id),
            member_id=sent.member_id,
            group_instance_id=self.instance_id,
        )
        try:
            response = await self.link.send(
                request, apis.HEARTBEAT, 3, 4, timeout=self.request_timeout
            )
        except RetriableError:
            self.heartbeat.failed(self._clock())
            self._heartbeat_wakeup.set()
            return
        self.handle_heartbeat_error(response.error_code, sent)

    def handle_heartbeat_error(self, error: ErrorCode, sent: Generation) -> None:
        now = self._clock()
        if error == ErrorCode.none:
            self.heartbeat.received(now)
            return
        if error == ErrorCode.rebalance_in_progress:
            # The coordinator is alive: it counts as an answer.
            self.heartbeat.received(now)
            if self.state is MemberState.STABLE:
                self.request_rejoin("the group is rebalancing (Heartbeat)")
            return
        self.heartbeat.failed(now)
        if error in _REDISCOVER:
            self.link.mark_unknown(f"{error.name} from Heartbeat")
        elif error == ErrorCode.fenced_instance_id:
            log.error("group %s: group.instance.id %s fenced", self.group_id, self.instance_id)
            if self.generation == sent:
                self.fatal_error = FencedInstanceIdError(self.instance_id)
        elif error in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            self.reset_generation_on_error(error, sent)
        elif error == ErrorCode.coordinator_load_in_progress:
            pass
        else:
            log.warning("group %s: unexpected heartbeat error %s", self.group_id, error)
        self._heartbeat_wakeup.set()

    # -- leaving -------------------------------------------------------------

    async def maybe_leave_group(self, reason: str) -> None:
        """Dynamic members send LeaveGroup; static ones only forget their generation
        (the coordinator keeps a static member until its session times out)."""
        if (
            self.instance_id is None
            and not self.link.unknown()
            and self.state is not MemberState.UNJOINED
            and self.generation.has_member_id
        ):
            log.info("group %s: leaving: %s", self.group_id, reason)
            request = LeaveGroupRequest(
                group_id=GroupId(self.group_id),
                members=(
                    MemberIdentity(
                        member_id=self.generation.member_id, group_instance_id=None, reason=reason
                    ),
                ),
            )
            try:
                await self.link.send(request, apis.LEAVE_GROUP, 3, 5, timeout=self.request_timeout)
            except RetriableError as e:
                log.info("group %s: LeaveGroup failed: %s", self.group_id, e)
        self.reset_state_and_generation(f"left the group: {reason}", forget_member_id=True)
        self.request_rejoin(reason)

    # -- offsets -------------------------------------------------------------

    def maybe_auto_commit_async(self, now: float) -> None:
        if not self.config.enable_auto_commit or now < self._next_auto_commit:
            return
        if self.link.unknown():
            self._next_auto_commit = now + self.retry_backoff
            return
        if self._auto_commit_task is not None and not self._auto_commit_task.done():
            return
        self._next_auto_commit = now + self.config.auto_commit_interval_ms / 1000
        offsets = self.subscriptions.all_consumed()
        if offsets:
            self._auto_commit_task = asyncio.get_running_loop().create_task(
                self._auto_commit(offsets, self.generation_for_new_commit())
            )

    async def _auto_commit(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], made_in: Generation
    ) -> None:
        try:
            await self.committer.commit_once(offsets, made_in)
        except RetriableError as e:
            log.debug("group %s: auto-commit failed, retrying soon: %s", self.group_id, e)
            self._next_auto_commit = min(self._clock() + self.retry_backoff, self._next_auto_commit)
        except KafkaError as e:
            if isinstance(e, FencedInstanceIdError):
                self.fatal_error = e
            log.warning("group %s: auto-commit of %s failed: %s", self.group_id, offsets, e)

    async def maybe_auto_commit_sync(
        self, timeout: float, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None
    ) -> None:
        """Commit what was consumed, as auto-commit does before giving partitions up;
        failures are logged, not raised (Java's rule)."""
        if not self.config.enable_auto_commit:
            return
        if offsets is None:
            offsets = self.subscriptions.all_consumed()
        if not offsets:
            return
        try:
            await self.committer.commit(offsets, self._clock() + timeout)
        except (KafkaError, TimeoutError) as e:
            if isinstance(e, FencedInstanceIdError):
                self.fatal_error = e
            log.warning("group %s: synchronous auto-commit failed: %s", self.group_id, e)

    # -- metadata ------------------------------------------------------------

    def on_metadata_update(self) -> None:
        """The leader rebalances when a subscribed topic's partition count changes."""
        if self.assignment_snapshot is None or not self.is_leader:
            return
        topics = sorted(self.subscriptions.group_subscription or self.subscriptions.subscription)
        if self.partition_counts(topics) != self.assignment_snapshot:
            self.request_rejoin("the partitions of a subscribed topic changed")

    # -- closing -------------------------------------------------------------

    async def close(self, timeout: float, *, leave: bool = True) -> None:
        if self._closed:
            return
        deadline = self._clock() + timeout
        try:
            if self.subscriptions.partitions_auto_assigned():
                join = self._join_task
                if join is not None and not join.done():
                    # A cooperative member may have handed out records during
                    # this rebalance; it can commit them only once in the new
                    # generation, so let the rebalance finish first.
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.shield(join), timeout)
                timeout = max(0.0, deadline - self._clock())
                await self.maybe_auto_commit_sync(timeout)
                await self.on_leave_prepare()
                if leave:
                    await self.maybe_leave_group("the consumer is being closed")
            elif self.config.enable_auto_commit:
                await self.maybe_auto_commit_sync(timeout)
        finally:
            self._closed = True
            self._heartbeat_wakeup.set()
            for task in (self._join_task, self._heartbeat_task, self._auto_commit_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task  # also collects the error of one that failed
            await self.link.close()
