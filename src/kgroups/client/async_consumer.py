"""The consumer, asyncio edition: every method that talks to a broker is a coroutine.

    consumer = AsyncConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing"})
    consumer.subscribe(["orders"])
    async for record in consumer:
        ...

The group membership (heartbeats included) runs as tasks on the event loop the
consumer is used from, so that loop must not be blocked for longer than
session.timeout.ms. ``Consumer`` is the blocking edition, with a loop of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_protocol_coordinator import ConsumerProtocolCoordinator
from kgroups.client.consumer_record import ConsumerRecord, OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator import ConsumerCoordinator
from kgroups.client.coordinator_link import CoordinatorLink, open_connection
from kgroups.client.fetcher import Fetcher
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.offset_lookup import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, list_offsets
from kgroups.client.starting_positions import reset_positions, seek_to_committed
from kgroups.client.subscribed_topics import raise_invalid_topics, topics_matching_pattern
from kgroups.client.subscription_state import EARLIEST, LATEST, SubscriptionState, SubscriptionType
from kgroups.errors import ErrorCode

__all__ = ["AsyncConsumer", "CommitCallback"]

log = logging.getLogger(__name__)

CommitCallback = Callable[[dict[TopicPartition, OffsetAndMetadata], Exception | None], Any]
"""Called with the offsets of an asynchronous commit and its error (None if it worked)."""


class AsyncConsumer:
    def __init__(self, config: Mapping[str, object]) -> None:
        self.config = ConsumerConfig.from_dict(config)
        self._clock = time.monotonic
        self._subscriptions = SubscriptionState(self.config.auto_offset_reset)
        self._cluster = ClusterClient(
            self.config.bootstrap_servers, self.config.client_id, self.config.security
        )
        client_id, security = self.config.client_id, self.config.security

        async def connect(host: str, port: int) -> Any:
            return await open_connection(host, port, client_id, security)

        self._fetcher = Fetcher(self.config, self._subscriptions, self._cluster, connect)
        self._coordinator: ConsumerCoordinator | ConsumerProtocolCoordinator | None = None
        if self.config.group_id is not None:
            link = CoordinatorLink(
                self.config.group_id,
                self._cluster,
                connect=connect,
                request_timeout_ms=self.config.request_timeout_ms,
                retry_backoff_ms=self.config.retry_backoff_ms,
            )
            kind = (
                ConsumerProtocolCoordinator
                if self.config.group_protocol == "consumer"
                else ConsumerCoordinator
            )
            self._coordinator = kind(self.config, self._subscriptions, self._cluster, link)
        self._metadata_refreshed_at = float("-inf")
        self._metadata_attempted_at = float("-inf")
        self._iterated: deque[ConsumerRecord] = deque()
        self._commit_tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- what to consume -----------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] | re.Pattern[str] | None = None,
        listener: Any = None,
        *,
        pattern: str | None = None,
    ) -> None:
        """Join the group and consume the partitions it assigns, of the given topics
        or of every topic matching a compiled pattern (matched here, against the
        metadata). ``pattern``: a regular expression in RE2 syntax that the group
        coordinator matches (group.protocol=consumer only, like the Java client's
        SubscriptionPattern). ``listener`` gets the RebalanceListener hooks."""
        self._check_open()
        if self._coordinator is None:
            raise RuntimeError("subscribing needs a group.id; use assign() without one")
        if pattern is not None:
            if topics is not None:
                raise ValueError("give topics or a pattern, not both")
            if self.config.group_protocol != "consumer":
                raise RuntimeError("a pattern for the coordinator needs group.protocol=consumer")
            if not pattern:
                raise ValueError("the pattern must not be empty")
            self._subscriptions.subscribe_regex(pattern, listener)
            return
        if topics is None:
            raise ValueError("no topics to subscribe to")
        if isinstance(topics, re.Pattern):
            self._subscriptions.subscribe_pattern(topics, listener)
            self._metadata_refreshed_at = float("-inf")
            return
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names:
            raise ValueError("no topics to subscribe to; unsubscribe() leaves the group")
        if any(not name.strip() for name in names):
            raise ValueError("topic names must not be empty")
        if self._subscriptions.subscribe(names, listener):
            self._metadata_refreshed_at = float("-inf")

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions, outside any group rebalancing."""
        self._check_open()
        chosen = [TopicPartition(*tp) for tp in partitions]
        if any(not tp.topic.strip() for tp in chosen):
            raise ValueError("topic names must not be empty")
        if self._subscriptions.assign_from_user(chosen):
            self._metadata_refreshed_at = float("-inf")

    async def unsubscribe(self) -> None:
        """Give up the subscription (leaving the group) or the manual assignment."""
        self._check_open()
        coordinator = self._coordinator
        if coordinator is not None and self._subscriptions.partitions_auto_assigned():
            await coordinator.on_leave_prepare()
            await coordinator.maybe_leave_group("the consumer unsubscribed")
        self._subscriptions.unsubscribe()
        self._fetcher.drop()

    def assignment(self) -> set[TopicPartition]:
        return self._subscriptions.assigned_partitions()

    def subscription(self) -> set[str]:
        return set(self._subscriptions.subscription)

    @property
    def member_id(self) -> str:
        return self._coordinator.generation.member_id if self._coordinator else ""

    @property
    def generation_id(self) -> int:
        return self._coordinator.generation.generation_id if self._coordinator else -1

    def group_metadata(self) -> ConsumerGroupMetadata:
        """What a transactional producer's send_offsets_to_transaction() needs."""
        if self.config.group_id is None:
            raise ValueError("a consumer without group.id has no group metadata")
        return ConsumerGroupMetadata(
            self.config.group_id, self.generation_id, self.member_id, self.config.group_instance_id
        )

    # -- polling -------------------------------------------------------------

    async def poll(
        self, timeout: float | None = None, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to ``timeout`` seconds
        (None: until some arrive). Also where rebalances, positions and
        auto-commit happen, so call it at least every max.poll.interval.ms."""
        self._check_open()
        if self._subscriptions.type is SubscriptionType.NONE:
            raise RuntimeError("the consumer is neither subscribed nor assigned partitions")
        limit = max_records or self.config.max_poll_records
        deadline = None if timeout is None else self._clock() + timeout
        while True:
            ready = await self._update_assignment_metadata(deadline)
            coordinator = self._coordinator
            if ready or (coordinator is not None and coordinator.may_consume_during_rebalance()):
                self._fetcher.raise_errors()
                records = self._fetcher.collect(limit)
                if records:
                    return records
                self._fetcher.kick()
            remaining = None if deadline is None else deadline - self._clock()
            if remaining is not None and remaining <= 0:
                return []
            # Wake for data, or soon anyway: the group may need attention.
            step = self.config.retry_backoff_ms / 1000 or 0.05
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._fetcher.data_ready.wait(),
                    step if remaining is None else min(step, remaining),
                )

    def __aiter__(self) -> AsyncConsumer:
        return self

    async def __anext__(self) -> ConsumerRecord:
        while not self._iterated:
            if self._closed:
                raise StopAsyncIteration
            self._iterated.extend(await self.poll(None))
        return self._iterated.popleft()

    async def _update_assignment_metadata(self, deadline: float | None) -> bool:
        await self._maybe_refresh_metadata()
        coordinator = self._coordinator
        if coordinator is not None and not await coordinator.poll(deadline):
            return False
        return await self._update_fetch_positions(deadline)

    async def _maybe_refresh_metadata(self) -> None:
        now = self._clock()
        subs = self._subscriptions
        topics = subs.metadata_topics()
        known = self._cluster.metadata.topics
        raise_invalid_topics(topics, known)
        due = (
            self._fetcher.metadata_stale
            or now - self._metadata_refreshed_at >= self.config.metadata_max_age_ms / 1000
            or any(t not in known or known[t].error != ErrorCode.none for t in topics)
        )
        if not due or now - self._metadata_attempted_at < self.config.retry_backoff_ms / 1000:
            return
        self._metadata_attempted_at = now
        try:
            if subs.has_pattern_subscription():
                await self._cluster.refresh(None)
            elif topics:
                await self._cluster.refresh(
                    sorted(topics), auto_create=self.config.allow_auto_create_topics
                )
            else:
                return
        except OSError as e:
            log.info("metadata refresh failed: %s", e)
            return
        self._metadata_refreshed_at = now
        self._fetcher.metadata_stale = False
        raise_invalid_topics(topics, self._cluster.metadata.topics)
        if subs.has_pattern_subscription():
            subs.subscribe_from_pattern(
                topics_matching_pattern(
                    subs, self._cluster.metadata.topics, self.config.exclude_internal_topics
                )
            )
        if self._coordinator is not None:
            self._coordinator.on_metadata_update()
        self._fetcher.kick()

    async def _update_fetch_positions(self, deadline: float | None) -> bool:
        """Give every assigned partition a position: the group's committed offset,
        else (or if it is out of range) per auto.offset.reset. False on timeout."""
        subs = self._subscriptions
        initializing = subs.initializing_partitions()
        if initializing:
            committer = None if self._coordinator is None else self._coordinator.committer
            if not await seek_to_committed(subs, initializing, committer, deadline):
                return False
        resets = subs.partitions_awaiting_reset()
        if resets and not await reset_positions(subs, resets, self._offsets_for, deadline):
            return False
        self._fetcher.kick()
        return True

    # -- positions -----------------------------------------------------------

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        """Read ``partition`` from ``offset`` on, from the next poll."""
        if offset < 0:
            raise ValueError("offsets are not negative")
        self._subscriptions.seek(TopicPartition(*partition), offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, LATEST)

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        chosen = (
            self.assignment() if partitions is None else {TopicPartition(*p) for p in partitions}
        )
        self._subscriptions.request_reset(chosen, strategy)

    async def position(
        self, partition: TopicPartition | tuple[str, int], timeout: float | None = None
    ) -> int:
        """The offset of the next record poll() will return for ``partition``."""
        tp = TopicPartition(*partition)
        deadline = self._clock() + (
            timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        )
        while True:
            position = self._subscriptions.position(tp)
            if position is not None:
                return position
            if self._clock() >= deadline:
                raise TimeoutError(f"no position for {tp} before the timeout")
            await self._maybe_refresh_metadata()
            if not await self._update_fetch_positions(deadline):
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop returning (and fetching) records of these partitions until resumed."""
        self._subscriptions.pause(TopicPartition(*p) for p in partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._subscriptions.resume(TopicPartition(*p) for p in partitions)
        self._fetcher.kick()

    def paused(self) -> set[TopicPartition]:
        return self._subscriptions.paused_partitions()

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._list(
            {TopicPartition(*p): EARLIEST_TIMESTAMP for p in partitions}, timeout
        )

    async def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._list({TopicPartition(*p): LATEST_TIMESTAMP for p in partitions}, timeout)

    async def _list(
        self, timestamps: dict[TopicPartition, int], timeout: float | None
    ) -> dict[TopicPartition, int]:
        seconds = timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        return await self._offsets_for(timestamps, self._clock() + seconds)

    async def _offsets_for(
        self, timestamps: dict[TopicPartition, int], deadline: float | None
    ) -> dict[TopicPartition, int]:
        return await list_offsets(
            self._cluster,
            timestamps,
            read_committed=self._fetcher.read_committed,
            request_timeout=self.config.request_timeout_ms / 1000,
            retry_backoff=self.config.retry_backoff_ms / 1000,
            deadline=deadline
            if deadline is not None
            else self._clock() + self.config.default_api_timeout_ms / 1000,
        )

    # -- committing ----------------------------------------------------------

    def _group(self) -> ConsumerCoordinator | ConsumerProtocolCoordinator:
        if self._coordinator is None:
            raise RuntimeError("committing offsets needs a group.id")
        self._coordinator.check_fatal()
        return self._coordinator

    def _offsets(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if offsets is None:
            return self._subscriptions.all_consumed()
        return {
            TopicPartition(*tp): om if isinstance(om, OffsetAndMetadata) else OffsetAndMetadata(om)
            for tp, om in offsets.items()
        }

    async def commit(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Commit and wait: the given offsets (the next offset to read, per
        partition), or everything poll() has returned so far."""
        coordinator = self._group()
        chosen = self._offsets(offsets)
        seconds = timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        await coordinator.committer.commit(chosen, self._clock() + seconds)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        callback: CommitCallback | None = None,
    ) -> asyncio.Task[None]:
        """Commit without waiting (one attempt, no retry, like Java's commitAsync);
        ``callback`` hears how it went. Commits reach the coordinator in call order."""
        coordinator = self._group()
        chosen = self._offsets(offsets)
        made_in = coordinator.generation_for_new_commit()  # however late it is sent

        async def run() -> None:
            error: Exception | None = None
            try:
                if not await coordinator.link.ensure_ready(
                    self._clock() + self.config.request_timeout_ms / 1000
                ):
                    raise TimeoutError("the group coordinator was not found in time")
                await coordinator.committer.commit_once(chosen, made_in)
            except Exception as e:
                error = e
                log.warning("asynchronous commit of %s failed: %s", chosen, e)
            if callback is not None:
                result = callback(chosen, error)
                if asyncio.iscoroutine(result):
                    await result
            elif error is not None:
                raise error

        task = asyncio.get_running_loop().create_task(run())
        self._commit_tasks.add(task)
        task.add_done_callback(self._commit_tasks.discard)
        return task

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where nothing is committed)."""
        coordinator = self._group()
        seconds = timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        return await coordinator.committer.fetch(
            {TopicPartition(*p) for p in partitions}, self._clock() + seconds
        )

    # -- closing -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the consumer is closed")

    async def close(self, timeout: float = 30.0) -> None:
        """Commit what was consumed (with auto-commit), hand the partitions back
        (on_partitions_revoked) and leave the group -- unless this is a static
        member, whose partitions wait for it until session.timeout.ms."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._commit_tasks:
                await asyncio.wait(set(self._commit_tasks), timeout=timeout)
            if self._coordinator is not None:
                await self._coordinator.close(timeout)
        finally:
            await self._fetcher.close()
            await self._cluster.close()

    async def __aenter__(self) -> AsyncConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
