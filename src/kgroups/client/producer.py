"""The producer, blocking edition.

    producer = Producer({"bootstrap.servers": "127.0.0.1:9092"})
    future = producer.send("orders", b"{...}", key=b"customer-42")
    producer.flush()
    print(future.result())             # RecordMetadata(topic, partition, offset, ...)
    producer.close()

With a ``transactional.id`` the records go in transactions (exactly once with a
read_committed consumer): init_transactions() once, then begin_transaction(),
send()s, send_offsets_to_transaction() for a consume-transform-produce loop, and
commit_transaction() or abort_transaction().

send() appends to a batch in the calling thread -- no hop to another thread per
record -- and returns at once with a DeliveryFuture; the AsyncProducer's sender
runs on the client's own event loop thread and settles the futures. send() only
blocks to learn a new topic's partitions or to wait for buffer room, at most
max.block.ms. Delivery callbacks (``future.add_done_callback``) run on that I/O
thread, as the Java client's do: keep them short.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping

from kgroups.client.async_producer import AsyncProducer, Headers
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.delivery import DeliveryFuture
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.sync_client import SyncClient

__all__ = ["Producer"]


class Producer(SyncClient[AsyncProducer]):
    def __init__(self, config: Mapping[str, object]) -> None:
        async def create() -> AsyncProducer:
            producer = AsyncProducer(config)
            producer._start()
            return producer

        super().__init__("kgroups-producer", create)
        self.config = self._core.config

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> DeliveryFuture:
        """Queue a record; ``.result()`` on the returned future waits for its
        RecordMetadata (or raises the error that failed it)."""
        # AsyncProducer.send's steps, kept apart: here waits block on the loop thread.
        if self._closed:
            raise RuntimeError("the producer is closed")
        core = self._core
        if core.transaction_manager is not None:
            core.transaction_manager.check_may_send()
        deadline = time.monotonic() + core.config.max_block_ms / 1000
        record = core.prepare(topic, value, key, headers, timestamp)
        tp = core.route(topic, key, partition)
        while tp is None:
            self._thread.call(core.wait_for_metadata(topic, deadline))
            tp = core.route(topic, key, partition)
        sender = core._sender
        if sender is not None:
            if sender.fatal_error is not None:
                raise sender.fatal_error
            sender.track_topic(topic)
        future = core._accumulator.append_blocking(
            tp, record, timeout=max(0.0, deadline - time.monotonic())
        )
        core.appended(tp, record.size)
        return future

    def init_transactions(self, timeout: float | None = None) -> None:
        """Fence older producers of the transactional.id; call once, first."""
        self._thread.call(self._core.init_transactions(timeout))

    def begin_transaction(self) -> None:
        self._thread.call(self._core.begin_transaction())

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """Commit the consumer's offsets with the transaction (``group_metadata``
        is ``consumer.group_metadata()``)."""
        self._thread.call(self._core.send_offsets_to_transaction(offsets, group_metadata, timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        self._thread.call(self._core.commit_transaction(timeout))

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._thread.call(self._core.abort_transaction(timeout))

    @property
    def producer_identity(self) -> tuple[int, int]:
        """(producer id, epoch): see AsyncProducer.producer_identity."""
        return self._core.producer_identity

    @property
    def transaction_started(self) -> bool:
        """Whether the current transaction holds anything the coordinator knows of."""
        manager = self._core.transaction_manager
        return manager is not None and manager.started

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until the broker answered it."""
        self._thread.call(self._core.flush(timeout))

    def partitions_for(self, topic: str) -> list[int]:
        return self._thread.call(self._core.partitions_for(topic))

    def close(self, timeout: float | None = None) -> None:
        self._close(functools.partial(self._core.close, timeout))
