"""The consumer, blocking edition: the AsyncConsumer on an event loop thread of its own.

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    while True:
        for record in consumer.poll(1.0):
            handle(record)

Heartbeats go on in that thread while the application processes records, as
with the Java client's heartbeat thread. Rebalance hooks and commit callbacks
run in the application's thread, inside its calls to the consumer (usually
poll), so they may call the consumer themselves -- commit() in
on_partitions_revoked, say.
"""

from __future__ import annotations

import concurrent.futures
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from kgroups.client.async_consumer import AsyncConsumer, CommitCallback
from kgroups.client.consumer_record import ConsumerRecord, OffsetAndMetadata, TopicPartition
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.loop_thread import LoopThread
from kgroups.client.sync_client import SyncClient

__all__ = ["Consumer"]

T = TypeVar("T")


class _InApplicationThread:
    """Runs the user's rebalance hooks in the application thread."""

    def __init__(self, listener: Any, thread: LoopThread) -> None:
        self._listener = listener
        self._thread = thread

    async def _run(self, hook: str, partitions: list[TopicPartition]) -> None:
        method = getattr(self._listener, hook, None)
        if method is None and hook == "on_partitions_lost":
            method = getattr(self._listener, "on_partitions_revoked", None)
        if method is not None:
            await self._thread.in_user_thread(method, partitions)

    async def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        await self._run("on_partitions_revoked", partitions)

    async def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        await self._run("on_partitions_assigned", partitions)

    async def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        await self._run("on_partitions_lost", partitions)


class Consumer(SyncClient[AsyncConsumer]):
    def __init__(self, config: Mapping[str, object]) -> None:
        async def create() -> AsyncConsumer:
            return AsyncConsumer(config)

        super().__init__("kgroups-consumer", create)
        self.config = self._core.config

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a plain method of the core on its loop, where its state lives."""

        async def run() -> T:
            return fn(*args)

        return self._thread.call(run())

    # -- what to consume -----------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] | re.Pattern[str] | None = None,
        listener: Any = None,
        *,
        pattern: str | None = None,
    ) -> None:
        wrapped = None if listener is None else _InApplicationThread(listener, self._thread)
        if topics is not None and not isinstance(topics, re.Pattern):
            topics = [topics] if isinstance(topics, str) else list(topics)
        self._call(functools.partial(self._core.subscribe, topics, wrapped, pattern=pattern))

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._call(self._core.assign, list(partitions))

    def unsubscribe(self) -> None:
        self._thread.call(self._core.unsubscribe())

    def assignment(self) -> set[TopicPartition]:
        return self._call(self._core.assignment)

    def subscription(self) -> set[str]:
        return self._call(self._core.subscription)

    @property
    def member_id(self) -> str:
        return self._core.member_id

    @property
    def generation_id(self) -> int:
        return self._core.generation_id

    def group_metadata(self) -> ConsumerGroupMetadata:
        """What a transactional producer's send_offsets_to_transaction() needs."""
        return self._call(self._core.group_metadata)

    # -- polling -------------------------------------------------------------

    def poll(
        self, timeout: float | None = None, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Records, waiting up to ``timeout`` seconds (None: until some arrive)."""
        return self._thread.call(self._core.poll(timeout, max_records))

    def __iter__(self) -> Iterator[ConsumerRecord]:
        while not self._closed:
            yield from self.poll(None)

    # -- positions -----------------------------------------------------------

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        self._call(self._core.seek, partition, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._call(self._core.seek_to_beginning, None if partitions is None else list(partitions))

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._call(self._core.seek_to_end, None if partitions is None else list(partitions))

    def position(
        self, partition: TopicPartition | tuple[str, int], timeout: float | None = None
    ) -> int:
        return self._thread.call(self._core.position(partition, timeout))

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._call(self._core.pause, list(partitions))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._call(self._core.resume, list(partitions))

    def paused(self) -> set[TopicPartition]:
        return self._call(self._core.paused)

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return self._thread.call(self._core.beginning_offsets(list(partitions), timeout))

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, int]:
        return self._thread.call(self._core.end_offsets(list(partitions), timeout))

    # -- committing ----------------------------------------------------------

    def commit(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Commit and wait: the given offsets, or everything poll() returned so far."""
        self._thread.call(self._core.commit(offsets, timeout))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
        callback: CommitCallback | None = None,
    ) -> concurrent.futures.Future[None]:
        """Commit without waiting. The future settles when the coordinator answers;
        ``callback(offsets, error)`` runs in this thread during a later call."""
        settled: concurrent.futures.Future[None] = concurrent.futures.Future()
        thread = self._thread

        def report(
            offsets: dict[TopicPartition, OffsetAndMetadata], error: Exception | None
        ) -> Any:
            if error is None:
                settled.set_result(None)
            else:
                settled.set_exception(error)
            if callback is not None:
                return thread.in_user_thread(callback, offsets, error)
            return None

        self._call(self._core.commit_async, offsets, report)
        return settled

    def committed(
        self, partitions: Iterable[TopicPartition], timeout: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return self._thread.call(self._core.committed(list(partitions), timeout))

    # -- closing -------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Commit (with auto-commit), revoke, leave the group unless static, stop."""
        self._close(functools.partial(self._core.close, timeout))
