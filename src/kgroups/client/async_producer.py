"""The producer, asyncio edition.

    producer = AsyncProducer({"bootstrap.servers": "127.0.0.1:9092"})
    delivery = await producer.send("orders", b"{...}", key=b"customer-42")
    metadata = await delivery          # RecordMetadata once the broker stored it
    await producer.close()

``send`` returns as soon as the record is in a batch (it waits only for topic
metadata or buffer room, up to max.block.ms); the batch goes out when full or
after linger.ms. ``Producer`` is the blocking edition, with a loop of its own.

With a ``transactional.id``, records are sent inside transactions:

    await producer.init_transactions()
    await producer.begin_transaction()
    await producer.send("out", b"...")
    await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    await producer.commit_transaction()      # or abort_transaction()
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kgroups.client.accumulator import PendingRecord, RecordAccumulator, record_size
from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import open_connection
from kgroups.client.delivery import DeliveryFuture
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.partitioner import partition_for_key
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.record_metadata import RecordMetadata
from kgroups.client.sender import Sender
from kgroups.client.sticky_partitioner import StickyPartitioner
from kgroups.client.transaction_manager import TransactionManager
from kgroups.client.transaction_requests import TransactionRequests
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["AsyncProducer", "Headers"]

Headers = Sequence[tuple[str, bytes | None]] | Mapping[str, bytes | None]


class AsyncProducer:
    def __init__(self, config: Mapping[str, object]) -> None:
        self.config = ProducerConfig.from_dict(config)
        self._cluster = ClusterClient(
            self.config.bootstrap_servers, self.config.client_id, self.config.security
        )
        self._accumulator = RecordAccumulator(
            batch_size=self.config.batch_size,
            linger_ms=self.config.linger_ms,
            buffer_memory=self.config.buffer_memory,
        )
        self._partitioner = StickyPartitioner(self.config.batch_size)
        self._sender: Sender | None = None
        self._sender_task: asyncio.Task[None] | None = None
        self._closed = False
        self.transaction_manager: TransactionManager | None = None
        if self.config.transactional_id is not None:
            self.transaction_manager = TransactionManager(
                self.config.transactional_id, self.config.transaction_timeout_ms
            )
        self._transactions: TransactionRequests | None = None

    def _start(self) -> Sender:
        if self._closed:
            raise RuntimeError("the producer is closed")
        if self._sender is None:
            client_id, security = self.config.client_id, self.config.security

            async def connect(host: str, port: int) -> Any:
                return await open_connection(host, port, client_id, security)

            self._sender = Sender(self.config, self._accumulator, self._cluster, connect)
            if self.transaction_manager is not None:
                assert self._sender.idempotence is not None
                self._transactions = self._sender.transactions = TransactionRequests(
                    self.config,
                    self.transaction_manager,
                    self._sender.idempotence,
                    self._cluster,
                    connect,
                )
            self._sender_task = asyncio.get_running_loop().create_task(self._sender.run())
        if self._sender.fatal_error is not None:
            raise self._sender.fatal_error
        return self._sender

    # -- sending -------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> DeliveryFuture:
        """Queue a record; the returned future (await it, or ``.result()``) gives
        its RecordMetadata once stored."""
        sender = self._start()
        if self.transaction_manager is not None:
            self.transaction_manager.check_may_send()
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        record = self.prepare(topic, value, key, headers, timestamp)
        tp = self.route(topic, key, partition)
        while tp is None:
            await self.wait_for_metadata(topic, deadline)
            tp = self.route(topic, key, partition)
        sender.topics.add(topic)
        while True:
            future = self._accumulator.try_append(tp, record)
            if future is not None:
                self.appended(tp, record.size)
                return future
            await self._accumulator.wait_for_room(max(0.0, deadline - time.monotonic()))

    # Spells out send's parameters, not *args: editors and type checkers show them.
    async def send_and_wait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        future = await self.send(topic, value, key, headers, partition, timestamp)
        return await future

    def prepare(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None,
        headers: Headers | None,
        timestamp: int | None,
    ) -> PendingRecord:
        """The record checked, with its timestamp and size: thread-safe."""
        if not topic:
            raise ValueError("a topic is needed")
        for name, data in (("key", key), ("value", value)):
            if data is not None and not isinstance(data, bytes):
                raise TypeError(f"the {name} must be bytes or None, not {type(data).__name__}")
        items = tuple(headers.items() if isinstance(headers, Mapping) else headers or ())
        size = record_size(key, value, items)
        if size > self.config.max_request_size or size > self.config.buffer_memory:
            raise KafkaError(
                ErrorCode.message_too_large,
                f"a record of {size} bytes exceeds max.request.size or buffer.memory",
            )
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        return PendingRecord(key, value, items, timestamp, size)

    def route(self, topic: str, key: bytes | None, partition: int | None) -> TopicPartition | None:
        """The record's partition, or None while the topic's metadata is unknown.
        Keyed records hash over all partitions (murmur2), others stick (thread-safe)."""
        info = self._cluster.metadata.topics.get(topic)
        if info is None or info.error != ErrorCode.none or not info.partitions:
            return None
        count = len(info.partitions)
        if partition is not None:
            if not 0 <= partition < count:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition,
                    f"topic {topic} has {count} partitions, not a partition {partition}",
                )
            return TopicPartition(topic, partition)
        if key is not None and not self.config.partitioner_ignore_keys:
            return TopicPartition(topic, partition_for_key(key, count))
        available = [p for p, leader in info.partitions.items() if leader >= 0]
        return TopicPartition(topic, self._partitioner.partition(topic, available, count))

    def appended(self, tp: TopicPartition, size: int) -> None:
        info = self._cluster.metadata.topics.get(tp.topic)
        if info is None:
            return
        available = [p for p, leader in info.partitions.items() if leader >= 0]
        self._partitioner.on_append(tp.topic, tp.partition, size, available, len(info.partitions))

    async def wait_for_metadata(self, topic: str, deadline: float) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while True:
            with contextlib.suppress(OSError):
                await self._cluster.refresh([topic], auto_create=True)
            info = self._cluster.metadata.topics.get(topic)
            if info is not None and info.partitions and info.error == ErrorCode.none:
                return
            if (
                info is not None
                and info.error not in (ErrorCode.none,)
                and not info.error.retriable
            ):
                raise KafkaError(info.error, f"topic {topic!r}")
            if time.monotonic() + backoff >= deadline:
                raise TimeoutError(f"topic {topic!r} not present in metadata within max.block.ms")
            await asyncio.sleep(backoff)

    async def partitions_for(self, topic: str) -> list[int]:
        await self.wait_for_metadata(topic, time.monotonic() + self.config.max_block_ms / 1000)
        return sorted(self._cluster.metadata.topics[topic].partitions)

    # -- transactions ----------------------------------------------------------

    def _transactional(self) -> tuple[TransactionManager, TransactionRequests]:
        self._start()
        if self.transaction_manager is None or self._transactions is None:
            raise RuntimeError("transactions need a transactional.id")
        return self.transaction_manager, self._transactions

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.config.max_block_ms / 1000 if timeout is None else timeout)

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the transactional id's producer id and a new epoch: any older
        producer with this transactional.id is fenced, and the transaction it
        left open is aborted. Call once, before the first transaction."""
        manager, requests = self._transactional()
        manager.begin_init()
        await requests.init_producer_id(self._deadline(timeout))
        manager.initialized()

    async def begin_transaction(self) -> None:
        manager, _ = self._transactional()
        manager.begin()

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer group's offsets (the next offsets to read) as part
        of the transaction: they count only if it commits. ``group_metadata`` is
        the consumer's ``group_metadata()``."""
        manager, requests = self._transactional()
        manager.check_may_send()
        positions = {
            tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        await requests.add_offsets(positions, group_metadata, self._deadline(timeout))

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Deliver every record sent in the transaction, then commit it. On an
        AbortableTransactionError, call abort_transaction(); on a TimeoutError,
        call commit_transaction() again."""
        manager, requests = self._transactional()
        manager.begin_commit()
        deadline = self._deadline(timeout)
        await self.flush(max(0.0, deadline - time.monotonic()))
        manager.begin_commit()  # raises if a record failed meanwhile
        if manager.started:
            await requests.end_txn(True, deadline)
        manager.completed()

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not sent yet, wait for those in flight, and abort:
        read_committed consumers never see the transaction's records."""
        manager, requests = self._transactional()
        manager.begin_abort()
        deadline = self._deadline(timeout)
        idem = requests.idempotence
        if any(b.base_sequence >= 0 for b in self._accumulator.queued()):
            idem.bump_needed = True  # their sequences will never reach the broker
        self._accumulator.abort_all(
            KafkaError(ErrorCode.transaction_abortable, "the transaction was aborted")
        )
        await self.flush(max(0.0, deadline - time.monotonic()))
        if manager.started:
            await requests.end_txn(False, deadline)
        if idem.bump_needed:
            await requests.init_producer_id(deadline)
        manager.completed()

    @property
    def producer_identity(self) -> tuple[int, int]:
        """(producer id, epoch) of an idempotent or transactional producer, (-1, -1)
        before it has one: with the transactional.id, that is what another process
        needs to end a transaction this producer leaves open (the Spark sink's
        driver commits its tasks' transactions so)."""
        idem = self._sender.idempotence if self._sender is not None else None
        return (idem.producer_id, idem.epoch) if idem is not None else (-1, -1)

    # -- flushing and closing -----------------------------------------------

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until it is answered."""
        if self._sender is None:
            return
        outcomes = self._accumulator.begin_flush()
        try:
            await asyncio.wait_for(asyncio.gather(*(o.wait_async() for o in outcomes)), timeout)
        finally:
            self._accumulator.end_flush()

    async def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (within ``timeout`` seconds), then stop."""
        if self._closed:
            return
        self._closed = True
        sender, task = self._sender, self._sender_task
        try:
            if sender is not None and task is not None:
                self._accumulator.closing = True
                await sender.close()
                try:
                    await asyncio.wait_for(asyncio.shield(task), timeout)
                except TimeoutError:
                    sender.abort(KafkaError(ErrorCode.request_timed_out, "the producer closed"))
                    await asyncio.gather(task, return_exceptions=True)
        finally:
            if self._transactions is not None:
                await self._transactions.close()
            await self._cluster.close()

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
