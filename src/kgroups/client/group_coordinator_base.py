"""What the consumer's two group coordinators share, the classic one
(``ConsumerCoordinator``) and the KIP-848 one (``ConsumerProtocolCoordinator``):
the collaborators they are built from, the offset committer and auto-commit
bound to their member, the errors of the application's rebalance hooks
(raised from the next poll), and the steps of closing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from kgroups.client.auto_commit import AutoCommit
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_membership import ConsumerMembership
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import CoordinatorLink, GroupCluster
from kgroups.client.group_member import GroupMember
from kgroups.client.group_membership import Generation
from kgroups.client.offset_committer import OffsetCommitter
from kgroups.client.rebalance_listener import invoke_listener
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import KafkaError
from kgroups.task_owner import TaskOwner

__all__ = ["GroupCoordinatorBase"]

Member = TypeVar("Member", GroupMember, ConsumerMembership)


class GroupCoordinatorBase(Generic[Member]):
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        cluster: GroupCluster,
        link: CoordinatorLink,
        member: Member,
        *,
        clock: Callable[[], float],
        lowest_commit_version: int,
    ) -> None:
        assert config.group_id is not None
        self.config = config
        self.group_id = config.group_id
        self.subscriptions = subscriptions
        self.cluster = cluster
        self.link = link
        self._clock = clock
        self.member: Member = member
        self.committer = OffsetCommitter(
            link,
            member,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            require_stable=config.isolation_level == "read_committed",
            lowest_commit_version=lowest_commit_version,
            clock=clock,
        )
        self.listener_errors: list[Exception] = []
        """Exceptions from rebalance hooks, raised from the next poll."""
        self._tasks = TaskOwner(f"group {self.group_id}")
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._rebalance_task: asyncio.Task[None] | None = None
        """The join (classic) or the reconciliation (consumer protocol) under way."""
        self.auto_commit = AutoCommit(
            config, subscriptions, link, self.committer, member, self._tasks, clock
        )
        self._closed = False

    # -- the member's standing -------------------------------------------------

    @property
    def fatal_error(self) -> KafkaError | None:
        return self.member.fatal_error

    def check_fatal(self) -> None:
        self.member.check_fatal()

    def generation_for_new_commit(self) -> Generation:
        return self.member.generation_for_new_commit()

    # -- rebalance hooks -------------------------------------------------------

    def raise_listener_errors(self) -> None:
        if self.listener_errors:
            error, self.listener_errors = self.listener_errors[0], []
            raise error

    async def _invoke(self, hook: str, partitions: frozenset[TopicPartition]) -> None:
        error = await invoke_listener(self.subscriptions.listener, hook, partitions)
        if error is not None:
            self.listener_errors.append(error)

    # -- offsets ---------------------------------------------------------------

    async def maybe_auto_commit_sync(
        self, timeout: float, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None = None
    ) -> None:
        """Commit what was consumed, as auto-commit does before giving partitions up;
        failures are logged, not raised (Java's rule)."""
        await self.auto_commit.commit_sync(timeout, offsets)

    # -- closing ---------------------------------------------------------------

    async def close(self, timeout: float, *, leave: bool = True) -> None:
        if self._closed:
            return
        deadline = self._clock() + timeout
        try:
            if self.subscriptions.partitions_auto_assigned():
                running = self._rebalance_task
                if running is not None and not running.done():
                    # Records handed out during a rebalance can be committed
                    # only once it is over, so let it finish first.
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.shield(running), timeout)
                await self.maybe_auto_commit_sync(max(0.0, deadline - self._clock()))
                await self.on_leave_prepare()
                if leave:
                    await self._leave_on_close()
            elif self.config.enable_auto_commit:
                await self.maybe_auto_commit_sync(timeout)
        finally:
            self._closed = True
            self._stop_heartbeat()
            await self._tasks.close()
            await self.link.close()

    async def on_leave_prepare(self) -> None:
        """Before leaving (close, unsubscribe): revoke, or report lost, what is owned."""
        raise NotImplementedError

    async def _leave_on_close(self) -> None:
        raise NotImplementedError

    def _stop_heartbeat(self) -> None:
        raise NotImplementedError
