"""The share consumer, blocking edition: the AsyncShareConsumer on an event
loop thread of its own (heartbeats go on while the application works).

    consumer = ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "jobs",
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["jobs"])
    while True:
        for record in consumer.poll(1.0):
            consumer.acknowledge(record, AcknowledgeType.ACCEPT if handle(record)
                                 else AcknowledgeType.RELEASE)
        consumer.commit_sync()

The acknowledgement commit callback runs in the application's thread, inside
its calls to the consumer, as Kafka's does.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kgroups.client.async_share_consumer import AckResults, AsyncShareConsumer
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.share_record import AcknowledgeType, ShareConsumerRecord
from kgroups.client.sync_client import SyncClient

__all__ = ["ShareConsumer"]

T = TypeVar("T")


class ShareConsumer(SyncClient[AsyncShareConsumer]):
    def __init__(self, config: Mapping[str, object]) -> None:
        async def create() -> AsyncShareConsumer:
            return AsyncShareConsumer(config)

        super().__init__("kgroups-share-consumer", create)
        self.config = self._core.config

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a plain method of the core on its loop, where its state lives."""

        async def run() -> T:
            return fn(*args)

        return self._thread.call(run())

    @property
    def member_id(self) -> str:
        return self._core.member_id

    @property
    def acquisition_lock_timeout_ms(self) -> int | None:
        return self._core.acquisition_lock_timeout_ms

    def subscribe(self, topics: Iterable[str]) -> None:
        self._call(self._core.subscribe, [topics] if isinstance(topics, str) else list(topics))

    def unsubscribe(self) -> None:
        self._thread.call(self._core.unsubscribe())

    def subscription(self) -> set[str]:
        return self._call(self._core.subscription)

    def assignment(self) -> set[TopicPartition]:
        return self._call(self._core.assignment)

    def set_acknowledgement_commit_callback(
        self, callback: Callable[[dict[TopicPartition, set[int]], Exception | None], Any] | None
    ) -> None:
        if callback is None:
            self._call(self._core.set_acknowledgement_commit_callback, None)
            return
        thread = self._thread

        async def in_application_thread(
            offsets: dict[TopicPartition, set[int]], error: Exception | None
        ) -> None:
            await thread.in_user_thread(callback, offsets, error)

        self._call(self._core.set_acknowledgement_commit_callback, in_application_thread)

    def poll(self, timeout: float) -> list[ShareConsumerRecord]:
        return self._thread.call(self._core.poll(timeout))

    def acknowledge(
        self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        self._call(self._core.acknowledge, record, type)

    def acknowledge_offset(
        self,
        topic: str,
        partition: int,
        offset: int,
        type: AcknowledgeType = AcknowledgeType.ACCEPT,
    ) -> None:
        self._call(self._core.acknowledge_offset, topic, partition, offset, type)

    def commit_sync(self, timeout: float | None = None) -> AckResults:
        return self._thread.call(self._core.commit_sync(timeout))

    def commit_async(self) -> concurrent.futures.Future[AckResults]:
        async def start() -> Any:
            return self._core.commit_async()

        task = self._thread.call(start())

        async def wait() -> AckResults:
            result: AckResults = await task
            return result

        return self._thread.submit(wait())

    def close(self, timeout: float = 30.0) -> None:
        self._close(lambda: self._core.close(timeout))
