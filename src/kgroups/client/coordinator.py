"""The consumer's side of the group protocol (the Java client's ConsumerCoordinator
on top of AbstractCoordinator): the asyncio half, which sends what
``GroupMember`` decides and calls the user's hooks as ``rebalance_plan`` orders.

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

A heartbeat task, independent of poll, keeps the membership alive once joined;
``GroupMember`` decides each of its steps and how each answer moves the member.
When the application has not polled for ``max.poll.interval.ms`` the task
leaves the group (a static member just forgets its generation: only its
session timeout ends a static membership).

Every task (join, heartbeat, each heartbeat request, auto-commit) belongs to
one ``TaskOwner``: close() cancels and awaits them all, and the error of one
that failed is raised from the next poll().

Everything runs on one event loop; interleaving happens only at ``await``, so
responses re-check the state they were sent in before acting on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment

from kgroups.assignors.protocol import Assignment, decode_assignment
from kgroups.client.assignor_choice import common_rebalance_protocol, make_assignors
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.coordinator_link import CoordinatorLink, GroupCluster
from kgroups.client.exceptions import RetriableError
from kgroups.client.group_coordinator_base import GroupCoordinatorBase
from kgroups.client.group_member import REJOIN_NOW, GroupMember, HeartbeatStep, coordinator_moved
from kgroups.client.group_membership import Generation, MemberState
from kgroups.client.leader_assignment import (
    assign_partitions,
    chosen_assignor,
    member_subscriptions,
    partition_counts,
)
from kgroups.client.rebalance_plan import Handover, after_assignment, before_rejoin
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["ConsumerCoordinator"]

log = logging.getLogger(__name__)

# Extra time granted to a JoinGroup beyond the rebalance timeout, as in Java.
_JOIN_GRACE = 5.0


class ConsumerCoordinator(GroupCoordinatorBase[GroupMember]):
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        cluster: GroupCluster,
        link: CoordinatorLink,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        assignors = make_assignors(config.partition_assignment_strategy)
        protocol = common_rebalance_protocol(assignors)
        member = GroupMember(config, subscriptions, assignors, protocol, now=clock())
        super().__init__(
            config, subscriptions, cluster, link, member, clock=clock, lowest_commit_version=7
        )
        self.assignors = assignors
        self.protocol = protocol
        self.request_timeout = config.request_timeout_ms / 1000
        self.retry_backoff = config.retry_backoff_ms / 1000
        self.join_timeout = max(
            self.request_timeout, config.rebalance_timeout_ms / 1000 + _JOIN_GRACE
        )
        self.assignment_snapshot: dict[str, int] | None = None
        """Partition counts the leader assigned from; a change means rebalance."""
        self.link.on_discovered = lambda: self.member.heartbeat.reset_session(self._clock())
        self._heartbeat_wakeup = asyncio.Event()

    # -- the member's standing (kept by GroupMember) --------------------------

    @property
    def generation(self) -> Generation:
        return self.member.generation

    @generation.setter
    def generation(self, generation: Generation) -> None:
        self.member.generation = generation

    @property
    def state(self) -> MemberState:
        return self.member.state

    @state.setter
    def state(self, state: MemberState) -> None:
        self.member.state = state

    @property
    def rejoin_needed(self) -> bool:
        return self.member.rejoin_needed

    @property
    def is_leader(self) -> bool:
        return self.member.is_leader

    def request_rejoin(self, reason: str) -> None:
        self.member.request_rejoin(reason)

    def may_consume_during_rebalance(self) -> bool:
        return self.member.may_consume_during_rebalance()

    # -- poll ----------------------------------------------------------------

    async def poll(self, deadline: float | None) -> bool:
        """One step of group upkeep: coordinator, membership, auto-commit.
        False when the deadline passed before the member is in the group."""
        self.member.check_fatal()
        self._tasks.raise_failure()
        now = self._clock()
        if self.subscriptions.partitions_auto_assigned():
            # Counts even when the coordinator is unreachable, so that a member
            # waiting for one is not considered stuck in its processing.
            self.member.heartbeat.poll(now)
            if not await self.link.ensure_ready(deadline):
                return False
            self._start_heartbeat()
            join_running = self._rebalance_task is not None
            if self.member.rejoin_needed_or_pending(join_running) and not (
                await self._ensure_active_group(deadline)
            ):
                return False
        elif self.config.enable_auto_commit and self.link.unknown():
            # Manually assigned partitions still auto-commit: start finding the
            # coordinator without waiting for it.
            await self.link.ensure_ready(now)
        self.raise_listener_errors()
        self.maybe_auto_commit_async(self._clock())
        return True

    async def _ensure_active_group(self, deadline: float | None) -> bool:
        if self._rebalance_task is None:
            self._rebalance_task = self._tasks.start(self._join_group_if_needed(), "join")
        task = self._rebalance_task
        remaining = None if deadline is None else max(0.0, deadline - self._clock())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), remaining)
        if not task.done():
            return False
        self._rebalance_task = None
        self._tasks.raise_failure()  # a fatal error of the join surfaces here
        return not self.member.rejoin_needed

    # -- joining -------------------------------------------------------------

    async def _join_group_if_needed(self) -> None:
        member = self.member
        while member.rejoin_needed and not self._closed:
            member.check_fatal()
            await self.link.ensure_ready(None)
            if member.needs_join_prepare:
                # Cleared first: if a hook raises, the retry must not run it twice.
                member.needs_join_prepare = False
                await self._on_join_prepare()
            try:
                assignment = await self._join_and_sync()
            except RetriableError as e:
                log.info("group %s: rebalance failed, retrying: %s", self.group_id, e)
                member.on_join_failed()
                await asyncio.sleep(self.retry_backoff)
                continue
            except KafkaError as e:
                if e.error_code in REJOIN_NOW:
                    member.on_join_failed()
                    continue
                raise
            generation = member.generation
            if member.joined_generation_intact():
                await self._on_join_complete(generation, assignment)
                member.needs_join_prepare = True

    async def _join_and_sync(self) -> bytes:
        """JoinGroup then SyncGroup; returns this member's assignment bytes."""
        member = self.member
        request = member.join_request()
        response = await self.link.send(request, apis.JOIN_GROUP, 5, 9, timeout=self.join_timeout)
        if coordinator_moved(response.error_code):
            self.link.mark_unknown(f"{response.error_code.name} from JoinGroup")
        leader = member.on_join_response(response, self._clock())
        self._heartbeat_wakeup.set()
        assignments = await self._on_join_leader(response) if leader else ()
        sync, sent = member.sync_request(assignments)
        response = await self.link.send(sync, apis.SYNC_GROUP, 3, 5, timeout=self.join_timeout)
        if coordinator_moved(response.error_code):
            self.link.mark_unknown(f"{response.error_code.name} from SyncGroup")
        return member.on_sync_response(response, sent)

    async def _on_join_leader(self, response: Any) -> tuple[SyncGroupRequestAssignment, ...]:
        assignor = chosen_assignor(self.assignors, response.protocol_name)
        subscriptions = member_subscriptions(response.members)
        topics = sorted({t for s in subscriptions.values() for t in s.topics})
        # The leader watches every topic of the group, to see partition changes.
        self.subscriptions.group_subscribe(topics)
        try:
            await self.cluster.refresh(topics)
        except OSError as e:
            raise RetriableError(ErrorCode.network_exception, f"metadata refresh: {e}") from e
        counts = self.partition_counts(topics)
        self.assignment_snapshot = counts
        self.member.is_leader = True
        return assign_partitions(self.group_id, assignor, self.protocol, counts, subscriptions)

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        return partition_counts(self.cluster.metadata, topics)

    async def _on_join_prepare(self) -> None:
        plan = before_rejoin(
            self.protocol,
            self.member.membership_stands(),
            self.subscriptions.assigned_partitions(),
            self.subscriptions.subscription,
        )
        await self._hand_over(plan)
        self.member.is_leader = False
        self.subscriptions.reset_group_subscription()

    async def _hand_over(self, plan: Handover) -> None:
        if plan.commit:
            self.subscriptions.mark_pending_revocation(plan.partitions)
            await self.maybe_auto_commit_sync(self.config.rebalance_timeout_ms / 1000)
        if plan.hook is not None:
            log.info("group %s: %s: %s", self.group_id, plan.hook, sorted(plan.partitions))
            await self._invoke(plan.hook, plan.partitions)
        if plan.kept is not None:
            self.subscriptions.assign_from_subscribed(plan.kept)

    async def _on_join_complete(self, generation: Generation, assignment_bytes: bytes) -> None:
        if not self.member.is_leader:
            self.assignment_snapshot = None
        assignor = chosen_assignor(self.assignors, generation.protocol_name)
        assignment = decode_assignment(assignment_bytes) if assignment_bytes else Assignment([])
        assigned = set(assignment.partitions)
        if not self.subscriptions.assignment_matches_subscription(assigned):
            log.warning(
                "group %s: assignment %s does not match the subscription",
                self.group_id,
                sorted(assigned),
            )
            self.member.request_rejoin("the assignment does not match the subscription")
            return
        owned = self.subscriptions.assigned_partitions()
        change = after_assignment(self.protocol, owned, assigned)
        if change.revoked:
            # Commit before giving them up, so that their next owner starts
            # exactly where we stopped.
            self.subscriptions.mark_pending_revocation(change.revoked)
            consumed = self.subscriptions.all_consumed()
            await self.maybe_auto_commit_sync(
                self.config.rebalance_timeout_ms / 1000,
                {tp: om for tp, om in consumed.items() if tp in change.revoked},
            )
            log.info("group %s: revoking %s", self.group_id, sorted(change.revoked))
            await self._invoke("on_partitions_revoked", change.revoked)
            self.member.request_rejoin(f"partitions {sorted(change.revoked)} were revoked")
        assignor.on_assignment(assignment, generation.generation_id)
        self.auto_commit.restart_interval(self._clock())
        self.subscriptions.assign_from_subscribed(assigned)
        log.info(
            "group %s: generation %s assigned %s (new: %s)",
            self.group_id,
            generation.generation_id,
            sorted(assigned),
            sorted(change.added),
        )
        await self._invoke("on_partitions_assigned", change.added)

    async def on_leave_prepare(self) -> None:
        """Before leaving (close, unsubscribe): revoke, or report lost, what we own."""
        owned = self.subscriptions.assigned_partitions()
        if owned and self.subscriptions.partitions_auto_assigned():
            hook = (
                "on_partitions_revoked" if self.member.membership_stands() else "on_partitions_lost"
            )
            await self._invoke(hook, frozenset(owned))
            self.subscriptions.assign_from_subscribed(())

    # -- heartbeats ----------------------------------------------------------

    def _start_heartbeat(self) -> None:
        running = self._heartbeat_task is not None and not self._heartbeat_task.done()
        if not running and not self._closed:
            # Restarts a task that failed once its error has been raised.
            self._heartbeat_task = self._tasks.start(self._heartbeat_loop(), "heartbeat")

    async def _heartbeat_loop(self) -> None:
        member = self.member
        while not self._closed:
            self._heartbeat_wakeup.clear()
            now = self._clock()
            step, wait = member.heartbeat_step(now, not self.link.unknown())
            if step is HeartbeatStep.STOP:
                return
            if step is HeartbeatStep.FIND_COORDINATOR:
                found = False
                with contextlib.suppress(KafkaError):
                    found = await self.link.ensure_ready(now + self.retry_backoff)
                if not found:
                    await asyncio.sleep(self.retry_backoff)
                continue
            if step is HeartbeatStep.SESSION_EXPIRED:
                self.link.mark_unknown("session timed out without a heartbeat response")
                continue
            if step is HeartbeatStep.POLL_EXPIRED:
                log.warning(
                    "group %s: max.poll.interval.ms (%s) passed without a poll; leaving the "
                    "group. Process less per poll (max.poll.records) or allow more time.",
                    self.group_id,
                    self.config.max_poll_interval_ms,
                )
                await self.maybe_leave_group("consumer poll timeout has expired")
                continue
            if step is HeartbeatStep.SEND:
                self._tasks.start(self._send_heartbeat(), "heartbeat request")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._heartbeat_wakeup.wait(), max(wait, 0.001))

    async def _send_heartbeat(self) -> None:
        request, sent = self.member.heartbeat_request()
        try:
            response = await self.link.send(
                request, apis.HEARTBEAT, 3, 4, timeout=self.request_timeout
            )
        except Exception as e:
            # No answer: the next heartbeat goes out after the backoff.
            self.member.on_heartbeat_failed(self._clock())
            self._heartbeat_wakeup.set()
            if isinstance(e, RetriableError):
                return
            raise  # unexpected: kept by the task owner, raised from the next poll
        self.handle_heartbeat_error(response.error_code, sent)

    def handle_heartbeat_error(self, error: ErrorCode, sent: Generation) -> None:
        if coordinator_moved(error):
            self.link.mark_unknown(f"{error.name} from Heartbeat")
        if self.member.on_heartbeat_response(error, sent, self._clock()):
            self._heartbeat_wakeup.set()

    # -- leaving -------------------------------------------------------------

    async def maybe_leave_group(self, reason: str) -> None:
        """Dynamic members send LeaveGroup; static ones only forget their generation
        (the coordinator keeps a static member until its session times out)."""
        request = self.member.leave_request(reason, not self.link.unknown())
        if request is not None:
            try:
                await self.link.send(request, apis.LEAVE_GROUP, 3, 5, timeout=self.request_timeout)
            except RetriableError as e:
                log.info("group %s: LeaveGroup failed: %s", self.group_id, e)
        self.member.on_left(reason)

    # -- offsets -------------------------------------------------------------

    def maybe_auto_commit_async(self, now: float) -> None:
        self.auto_commit.maybe_commit_async(now)

    # -- metadata ------------------------------------------------------------

    def on_metadata_update(self) -> None:
        """The leader rebalances when a subscribed topic's partition count changes."""
        if self.assignment_snapshot is None or not self.member.is_leader:
            return
        topics = sorted(self.subscriptions.group_subscription or self.subscriptions.subscription)
        if self.partition_counts(topics) != self.assignment_snapshot:
            self.member.request_rejoin("the partitions of a subscribed topic changed")

    # -- closing -------------------------------------------------------------

    async def _leave_on_close(self) -> None:
        await self.maybe_leave_group("the consumer is being closed")

    def _stop_heartbeat(self) -> None:
        self._heartbeat_wakeup.set()  # the loop sees the consumer closed
