"""Committing consumed offsets without being asked (``enable.auto.commit``).

Two ways, as in the Java client:

- in the background, every ``auto.commit.interval.ms``, from poll(): one attempt
  in a task of its own, bound to the generation of the moment it is made (a
  retriable failure brings the next attempt forward to ``retry.backoff.ms``);
- synchronously, before partitions are given up (a rebalance, close): the
  partitions' next owner must start where this member stopped.

Failures are logged, never raised to the application (Java's rule), except
FENCED_INSTANCE_ID, which ends the member for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_membership import ConsumerMembership
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import CoordinatorLink
from kgroups.client.exceptions import FencedInstanceIdError, RetriableError
from kgroups.client.group_member import GroupMember
from kgroups.client.group_membership import Generation
from kgroups.client.offset_committer import OffsetCommitter
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import KafkaError
from kgroups.task_owner import TaskOwner

__all__ = ["AutoCommit"]

log = logging.getLogger(__name__)


class AutoCommit:
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        link: CoordinatorLink,
        committer: OffsetCommitter,
        member: GroupMember | ConsumerMembership,
        tasks: TaskOwner,
        clock: Callable[[], float],
    ) -> None:
        self.enabled = config.enable_auto_commit
        self.interval = config.auto_commit_interval_ms / 1000
        self.retry_backoff = config.retry_backoff_ms / 1000
        self.subscriptions = subscriptions
        self.link = link
        self.committer = committer
        self.member = member
        self._tasks = tasks
        self._clock = clock
        self.task: asyncio.Task[None] | None = None
        self._next = clock() + self.interval

    def restart_interval(self, now: float) -> None:
        """A new assignment: the next background commit is a full interval away."""
        self._next = now + self.interval

    def maybe_commit_async(self, now: float) -> None:
        if not self.enabled or now < self._next:
            return
        if self.link.unknown():
            self._next = now + self.retry_backoff
            return
        if self.task is not None and not self.task.done():
            return
        self._next = now + self.interval
        offsets = self.subscriptions.all_consumed()
        if offsets:
            made_in = self.member.generation_for_new_commit()
            self.task = self._tasks.start(self._commit_once(offsets, made_in), "auto-commit")

    async def _commit_once(
        self, offsets: dict[TopicPartition, OffsetAndMetadata], made_in: Generation
    ) -> None:
        try:
            await self.committer.commit_once(offsets, made_in)
        except RetriableError as e:
            log.debug("group %s: auto-commit failed, retrying soon: %s", self.member.group_id, e)
            self._next = min(self._clock() + self.retry_backoff, self._next)
        except KafkaError as e:
            if isinstance(e, FencedInstanceIdError):
                self.member.fatal_error = e
            log.warning("group %s: auto-commit of %s failed: %s", self.member.group_id, offsets, e)

    async def commit_sync(
        self, timeout: float, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None
    ) -> None:
        """Commit what was consumed (or ``offsets``), retrying until ``timeout``."""
        if not self.enabled:
            return
        if offsets is None:
            offsets = self.subscriptions.all_consumed()
        if not offsets:
            return
        try:
            # A stale epoch is retried: these offsets must reach the next owner.
            await self.committer.commit(offsets, self._clock() + timeout, retry_stale_epoch=True)
        except (KafkaError, TimeoutError) as e:
            if isinstance(e, FencedInstanceIdError):
                self.member.fatal_error = e
            log.warning("group %s: synchronous auto-commit failed: %s", self.member.group_id, e)
