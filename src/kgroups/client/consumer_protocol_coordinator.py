"""The consumer's side of the KIP-848 consumer group protocol
(``group.protocol=consumer``; the Java client's AsyncKafkaConsumer with its
ConsumerMembershipManager): the counterpart of ``ConsumerCoordinator`` for the
classic protocol, with the same face to ``AsyncConsumer``.

A ``HeartbeatManager`` task keeps the member in the group; ``ConsumerMembership``
holds its state. The application's poll() applies what the heartbeats bring:

- a new assignment is *reconciled*: commit what was consumed (with
  auto-commit), give up the partitions no longer assigned
  (``on_partitions_revoked``, only when there are some), take the new ones
  (``on_partitions_assigned``, called on every reconciliation, maybe with
  none), then acknowledge by the next heartbeat, at once. Partitions kept
  throughout are consumed without a pause: no other member waits on this one
  except for the partitions it gives up;
- a fenced member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) or one that left on
  a poll timeout gives up everything as lost (``on_partitions_lost``) and joins
  again with epoch 0.

Hooks run inside poll() (the blocking Consumer runs them in the application's
thread), so an application that stops polling stops reconciling -- the
coordinator then takes the partitions back after the rebalance timeout
(max.poll.interval.ms), as with the Java client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable

from kgroups.client.assignment_reconciliation import plan_reconciliation
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_membership import ConsumerMembership, MemberState
from kgroups.client.coordinator_link import CoordinatorLink, GroupCluster
from kgroups.client.exceptions import RetriableError
from kgroups.client.group_coordinator_base import GroupCoordinatorBase
from kgroups.client.group_membership import Generation
from kgroups.client.heartbeat_manager import HEARTBEAT_VERSIONS, HeartbeatManager
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import KafkaError
from kgroups.protocol import apis

__all__ = ["ConsumerProtocolCoordinator"]

log = logging.getLogger(__name__)

_JOIN_CHECK = 1.0
"""While joining, poll() looks at the heartbeat task at least this often (seconds)."""


class TopicNames:
    """Topic id to name: the metadata's, and those of partitions owned."""

    def __init__(self, cluster: GroupCluster) -> None:
        self.cluster = cluster
        self.owned: dict[uuid.UUID, str] = {}

    def current(self) -> dict[uuid.UUID, str]:
        names = dict(self.owned)
        for name, info in self.cluster.metadata.topics.items():
            topic_id = getattr(info, "topic_id", None)
            if topic_id is not None and topic_id.int != 0:
                names[topic_id] = name
        return names


class ConsumerProtocolCoordinator(GroupCoordinatorBase[ConsumerMembership]):
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        cluster: GroupCluster,
        link: CoordinatorLink,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        member = ConsumerMembership(config, subscriptions, now=clock())
        # OffsetCommit v9 is the first whose member epoch the coordinator checks.
        super().__init__(
            config, subscriptions, cluster, link, member, clock=clock, lowest_commit_version=9
        )
        self.names = TopicNames(cluster)
        self.heartbeat = HeartbeatManager(
            member,
            link,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            on_poll_expired=self._leave_on_poll_timeout,
            clock=clock,
        )

    # -- the member's standing -------------------------------------------------

    @property
    def generation(self) -> Generation:
        return self.member.generation

    @property
    def state(self) -> MemberState:
        return self.member.state

    def may_consume_during_rebalance(self) -> bool:
        """Partitions kept through a reconciliation are consumed throughout."""
        return self.member.fatal_error is None

    # -- poll ------------------------------------------------------------------

    async def poll(self, deadline: float | None) -> bool:
        """One step of group upkeep: join, apply what the heartbeats brought,
        auto-commit. False when the deadline passed first."""
        self.member.check_fatal()
        self._tasks.raise_failure()
        now = self._clock()
        if self.subscriptions.partitions_auto_assigned():
            self.member.on_poll(now)
            if self.member.state is MemberState.UNSUBSCRIBED:
                self.member.join(now)
                self.heartbeat.wake()
            if not await self.link.ensure_ready(deadline):
                return False
            self._start_heartbeat()
            if not await self._joined(deadline) or not await self._apply_changes(deadline):
                return False
        elif self.config.enable_auto_commit and self.link.unknown():
            await self.link.ensure_ready(now)
        self.raise_listener_errors()
        self.auto_commit.maybe_commit_async(self._clock())
        return True

    async def _joined(self, deadline: float | None) -> bool:
        """While joining, wait for the coordinator's answer (as the classic
        consumer waits for its JoinGroup), so that the first assignment is
        applied in this poll rather than the next."""
        member = self.member
        while member.state is MemberState.JOINING and member.target is None:
            member.check_fatal()
            self._tasks.raise_failure()  # a heartbeat task that died answers nothing
            self.heartbeat.answered.clear()
            remaining = _JOIN_CHECK if deadline is None else deadline - self._clock()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.heartbeat.answered.wait(), min(remaining, _JOIN_CHECK))
        return True

    async def _apply_changes(self, deadline: float | None) -> bool:
        member = self.member
        if self._rebalance_task is None:
            if not (member.needs_release() or member.reconcile_needed()):
                return True
            self._rebalance_task = self._tasks.start(self._reconcile_loop(), "reconcile")
        task = self._rebalance_task
        remaining = None if deadline is None else max(0.0, deadline - self._clock())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), remaining)
        if not task.done():
            return False
        self._rebalance_task = None
        self._tasks.raise_failure()
        return True

    def _start_heartbeat(self) -> None:
        running = self._heartbeat_task is not None and not self._heartbeat_task.done()
        if not running and not self._closed:
            self._heartbeat_task = self._tasks.start(self.heartbeat.run(), "heartbeat")

    # -- reconciliation --------------------------------------------------------

    async def _reconcile_loop(self) -> None:
        member = self.member
        while not self._closed and member.fatal_error is None:
            if member.needs_release():
                await self._release_as_lost()
                member.on_released()
                member.join(self._clock())
                self.heartbeat.wake()
            elif member.reconcile_needed():
                await self._reconcile()
            else:
                return

    async def _release_as_lost(self) -> None:
        owned = self.subscriptions.assigned_partitions()
        if owned:
            log.info("group %s: partitions lost: %s", self.group_id, sorted(owned))
            await self._invoke("on_partitions_lost", frozenset(owned))
        self.subscriptions.assign_from_subscribed(())
        self.names.owned = {}

    async def _reconcile(self) -> None:
        member = self.member
        incarnation = member.incarnation
        target = member.target
        assert target is not None
        owned = self.subscriptions.assigned_partitions()
        plan = plan_reconciliation(target, self.names.current(), owned)
        if plan.unresolved:
            # Topics this member never saw (a regex subscription, a new topic).
            with contextlib.suppress(OSError):
                await self.cluster.refresh(None)
            plan = plan_reconciliation(target, self.names.current(), owned)
            if plan.unresolved:
                log.info(
                    "group %s: topic ids %s not in the metadata yet",
                    self.group_id,
                    sorted(str(t) for t in plan.unresolved),
                )
        if member.assignment is not None and plan.resolved == member.assignment:
            # Nothing this member can act on changed: acknowledge it as it is.
            if member.on_reconciled(plan.resolved, incarnation, self._clock()):
                self.heartbeat.wake()
            return
        log.info(
            "group %s: reconciling epoch %s: assigned %s, revoking %s, adding %s",
            self.group_id,
            member.epoch,
            sorted(plan.assigned),
            sorted(plan.revoked),
            sorted(plan.added),
        )
        if plan.revoked:
            # Nothing more of them reaches the application: their offsets are
            # committed now and their next owner starts from there.
            self.subscriptions.mark_pending_revocation(plan.revoked)
        await self.auto_commit.commit_sync(self.config.rebalance_timeout_ms / 1000)
        if member.incarnation != incarnation:
            return
        if plan.revoked:
            await self._invoke("on_partitions_revoked", plan.revoked)
            self.subscriptions.assign_from_subscribed(owned - plan.revoked)
            if member.incarnation != incarnation:
                return
        self.subscriptions.assign_from_subscribed(plan.assigned)
        self.names.owned = dict(plan.names)
        await self._invoke("on_partitions_assigned", plan.added)
        self.auto_commit.restart_interval(self._clock())
        if member.on_reconciled(plan.resolved, incarnation, self._clock()):
            self.heartbeat.wake()

    # -- leaving ---------------------------------------------------------------

    async def on_leave_prepare(self) -> None:
        """Before leaving (close, unsubscribe): revoke what is owned -- or report
        it lost when the membership is already gone."""
        owned = self.subscriptions.assigned_partitions()
        if owned and self.subscriptions.partitions_auto_assigned():
            hook = "on_partitions_revoked" if self.member.in_group() else "on_partitions_lost"
            await self._invoke(hook, frozenset(owned))
            self.subscriptions.assign_from_subscribed(())
            self.names.owned = {}

    async def maybe_leave_group(self, reason: str, *, stale: bool = False) -> None:
        """A heartbeat with epoch -1 (-2 for a static member, whose partitions
        then wait for it until the session times out)."""
        member = self.member
        if not member.leave(reason):
            return
        self.heartbeat.wake()
        try:
            version = self.link.version_for(apis.CONSUMER_GROUP_HEARTBEAT, *HEARTBEAT_VERSIONS)
            request = member.leave_request(version)
            await self.link.send(
                request,
                apis.CONSUMER_GROUP_HEARTBEAT,
                version,
                version,
                timeout=self.config.request_timeout_ms / 1000,
            )
        except (RetriableError, KafkaError) as e:
            log.info("group %s: leave heartbeat failed: %s", self.group_id, e)
        member.on_left(stale=stale)

    async def _leave_on_poll_timeout(self) -> None:
        await self.maybe_leave_group("consumer poll timeout has expired", stale=True)

    # -- metadata --------------------------------------------------------------

    def on_metadata_update(self) -> None:
        """Topic ids not resolved before may be now: reconcile again."""
        member = self.member
        if member.state is MemberState.STABLE and member.target != member.assignment:
            member.state = MemberState.RECONCILING

    # -- closing ---------------------------------------------------------------

    async def _leave_on_close(self) -> None:
        if not self.link.unknown():
            await self.maybe_leave_group("the consumer is being closed")

    def _stop_heartbeat(self) -> None:
        self.heartbeat.stop()
