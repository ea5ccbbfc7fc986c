"""Moving ready batches to partition leaders (the Java client's Sender).

One loop on the client's event loop: find the partitions whose batch is ready,
group them by leader, and send each leader a Produce request with at most one
batch per partition, up to ``max.request.size`` -- as long as fewer than
``max.in.flight.requests.per.connection`` requests are unanswered on that
connection. Each broker gets a connection of its own, so produce traffic never
waits behind metadata requests.

An answer settles each batch: success completes its futures; a retriable error
(leader moved, timeout, lost connection) sends it back to the accumulator to
retry after ``retry.backoff.ms`` while ``delivery.timeout.ms`` allows; anything
else fails it. With idempotence the ordering rules of ``idempotence`` apply.

A transactional producer's batches carry the transactional id and the
transactional bit; before a partition's first batch of a transaction goes out,
the transaction coordinator adds the partition (one AddPartitionsToTxn for all
the partitions that became ready), and a batch that fails for good fails the
transaction, which can then only be aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable
from typing import Any

from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i16, i32, i32Timedelta

from kgroups.client.accumulator import ProducerBatch, RecordAccumulator
from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.coordinator_link import Connect
from kgroups.client.exceptions import FatalTransactionError
from kgroups.client.idempotence import IdempotenceState
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.transaction_manager import TxnState
from kgroups.client.transaction_requests import TransactionRequests
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["Sender"]

log = logging.getLogger(__name__)

_REFRESH_ON = (
    ErrorCode.not_leader_or_follower,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.leader_not_available,
    ErrorCode.kafka_storage_error,
    ErrorCode.network_exception,
)


_FENCED = (
    ErrorCode.producer_fenced,
    ErrorCode.invalid_producer_epoch,
    ErrorCode.transactional_id_authorization_failed,
)


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class Sender:
    def __init__(
        self,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        cluster: ClusterClient,
        connect: Connect,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.accumulator = accumulator
        self.cluster = cluster
        self._connect = connect
        self._clock = clock
        self.idempotence = IdempotenceState() if config.enable_idempotence else None
        self.transactions: TransactionRequests | None = None
        """Set by the producer when it has a transactional.id."""
        self._transactional_id = (
            TransactionalId(config.transactional_id) if config.transactional_id else None
        )
        self._wakeup = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._conns: dict[int, Any] = {}
        self._opening: dict[int, asyncio.Task[Any]] = {}
        self._requests_in_flight: dict[int, int] = {}
        self._batches_in_flight: dict[TopicPartition, list[ProducerBatch]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.topics: set[str] = set()
        self.metadata_stale = False
        self._metadata_refreshed_at = clock()
        self._running = True
        self.fatal_error: BaseException | None = None
        accumulator.wakeup = self.wakeup
        self._backoff = config.retry_backoff_ms / 1000
        self._delivery_timeout = config.delivery_timeout_ms / 1000

    def track_topic(self, topic: str) -> None:
        """Keep ``topic``'s metadata fresh (safe from any thread)."""
        if topic not in self.topics:
            self._loop.call_soon_threadsafe(self.topics.add, topic)

    def wakeup(self) -> None:
        """Safe from any thread."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._wakeup.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wakeup.set)

    # -- the loop ------------------------------------------------------------

    async def run(self) -> None:
        while self._running or self.accumulator.has_unsent() or self._any_in_flight():
            self._wakeup.clear()
            try:
                delay = await self._run_once()
            except Exception as e:  # never let the loop die with batches waiting
                log.exception("producer sender failed")
                self.fatal_error = e
                self.accumulator.abort_all(e)
                delay = self._backoff
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), min(delay, 1.0))
        for conn in self._conns.values():
            await conn.close()

    def _any_in_flight(self) -> bool:
        return any(self._batches_in_flight.values())

    async def _run_once(self) -> float:
        now = self._clock()
        for batch in self.accumulator.expire(now, self._delivery_timeout):
            self._fail(
                batch, KafkaError(ErrorCode.request_timed_out, self._expiry_message(batch, now))
            )
        if await self._maybe_refresh_metadata(now):
            return self._backoff
        idem = self.idempotence
        txn = self.transactions
        if txn is not None:
            if not idem or not idem.has_producer_id:
                return self._backoff  # init_transactions() gets the producer id
        elif idem is not None and (not idem.has_producer_id or idem.bump_needed):
            if self._any_in_flight():
                return self._backoff  # an epoch bump waits for every answer
            if not await self._init_producer_id():
                return self._backoff
        ready, delay = self.accumulator.ready(now)
        if txn is not None and ready:
            ready = await self._in_transaction(txn, ready)
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in ready:
            leader = self.cluster.leader_id(*tp)
            if leader is None:
                self.metadata_stale = True
                continue
            by_node.setdefault(leader, []).append(tp)
        sent = False
        for node, partitions in by_node.items():
            if self._requests_in_flight.get(node, 0) >= self.config.max_in_flight:
                continue
            batches = self._drain(partitions)
            if batches:
                sent = True
                self._requests_in_flight[node] = self._requests_in_flight.get(node, 0) + 1
                task = self._loop.create_task(self._produce(node, batches))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        if sent:
            return 0.0
        return delay if ready == [] else min(delay, self._backoff)

    async def _in_transaction(
        self, txn: TransactionRequests, ready: list[TopicPartition]
    ) -> list[TopicPartition]:
        """The ready partitions the coordinator has in the transaction, after
        asking it to add the new ones."""
        manager = txn.manager
        if manager.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            if manager.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
                assert manager.error is not None
                self.accumulator.abort_all(manager.error)
            return []
        new = [tp for tp in ready if manager.needs_adding(tp)]
        if new:
            deadline = self._clock() + self.config.request_timeout_ms / 1000
            try:
                await txn.add_partitions(new, deadline)
            except (KafkaError, TimeoutError) as e:
                log.info("adding partitions to the transaction failed: %r", e)
                if manager.state in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
                    self.accumulator.abort_all(e)
                return []
        return [tp for tp in ready if not manager.needs_adding(tp)]

    def _expiry_message(self, batch: ProducerBatch, now: float) -> str:
        return (
            f"expiring {len(batch.records)} record(s) for {batch.tp.topic}-{batch.tp.partition}: "
            f"{(now - batch.created) * 1000:.0f} ms has passed since batch creation"
        )

    def _drain(self, partitions: list[TopicPartition]) -> list[ProducerBatch]:
        batches: list[ProducerBatch] = []
        size = 0
        for tp in partitions:
            head = self.accumulator.peek(tp)
            if head is None or not self._may_send(tp, head):
                continue
            if batches and size + head.size > self.config.max_request_size:
                break
            batch = self.accumulator.drain(tp)
            if batch is None:
                continue
            idem = self.idempotence
            if (
                idem is not None
                and batch.attempts
                and idem.stored(tp, batch.base_sequence, len(batch.records))
            ):
                # A later batch was acknowledged, so the broker stored this one: it
                # appends a producer's batches only in sequence order.
                self._succeed(batch, -1, -1)
                continue
            if idem is not None and batch.base_sequence < 0:
                batch.base_sequence = idem.assign(tp, len(batch.records))
            size += batch.size
            batches.append(batch)
            self._batches_in_flight.setdefault(tp, []).append(batch)
        return batches

    def _may_send(self, tp: TopicPartition, head: ProducerBatch) -> bool:
        in_flight = self._batches_in_flight.get(tp, ())
        idem = self.idempotence
        if idem is not None and (head.attempts or not idem.has_acknowledged(tp)):
            # A retry goes alone, and so does a partition's first batch: the
            # broker must see our sequences in order.
            return not in_flight
        return len(in_flight) < self.config.max_in_flight

    # -- requests ------------------------------------------------------------

    async def _connection(self, node: int) -> Any:
        conn = self._conns.get(node)
        if conn is not None and not conn.closed:
            return conn
        # Requests racing to a new broker share one connection attempt.
        opening = self._opening.get(node)
        if opening is None:
            opening = self._opening[node] = self._loop.create_task(self._open(node))
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening.pop(node, None)

    async def _open(self, node: int) -> Any:
        address = self.cluster.address(node)
        if address is None:
            raise ConnectionError(f"broker {node} is not in the metadata")
        conn = await asyncio.wait_for(
            self._connect(*address), self.config.request_timeout_ms / 1000
        )
        self._conns[node] = conn
        return conn

    async def _produce(self, node: int, batches: list[ProducerBatch]) -> None:
        try:
            idem = self.idempotence
            pid, epoch = (idem.producer_id, idem.epoch) if idem is not None else (-1, -1)
            transactional = self.transactions is not None
            by_topic: dict[str, list[PartitionProduceData]] = {}
            for batch in batches:
                data = batch.encode(self.config.compression, pid, epoch, transactional)
                by_topic.setdefault(batch.tp.topic, []).append(
                    PartitionProduceData(index=i32(batch.tp.partition), records=Records(data))
                )
            request = ProduceRequest(
                transactional_id=self._transactional_id,
                acks=i16(self.config.acks),
                timeout=_ms(self.config.request_timeout_ms),
                topic_data=tuple(
                    TopicProduceData(name=TopicName(t), partition_data=tuple(ps))
                    for t, ps in by_topic.items()
                ),
            )
            try:
                conn = await self._connection(node)
                version = conn.version_for(apis.PRODUCE, 3, 9)
                if self.config.acks == 0:
                    await conn.send(request, version=version, expect_response=False)
                    for batch in batches:
                        self._succeed(batch, -1, -1)
                    return
                response = await asyncio.wait_for(
                    conn.send(request, version=version),
                    self.config.request_timeout_ms / 1000 + 1,
                )
            except OSError as e:
                log.info("produce to broker %s failed: %r", node, e)
                stale = self._conns.pop(node, None)
                if stale is not None:
                    await stale.close()
                self.metadata_stale = True
                for batch in batches:
                    self._retry_or_fail(batch, ErrorCode.network_exception, repr(e))
                return
            self._handle(batches, response)
        finally:
            self._requests_in_flight[node] -= 1
            self._wakeup.set()

    def _handle(self, batches: list[ProducerBatch], response: Any) -> None:
        by_tp = {b.tp: b for b in batches}
        for topic in response.responses:
            for p in topic.partition_responses:
                batch = by_tp.pop(TopicPartition(topic.name, p.index), None)
                if batch is None:
                    continue
                if p.error_code == ErrorCode.none:
                    append_time = -1
                    if p.log_append_time is not None:
                        append_time = int(p.log_append_time.timestamp() * 1000)
                    self._succeed(batch, p.base_offset, append_time)
                else:
                    self._on_error(batch, p.error_code, p.error_message)
        for batch in by_tp.values():  # the broker skipped a partition: try again
            self._retry_or_fail(batch, ErrorCode.network_exception, "no answer for the partition")

    def _settled(self, batch: ProducerBatch) -> None:
        in_flight = self._batches_in_flight.get(batch.tp)
        if in_flight is not None and batch in in_flight:
            in_flight.remove(batch)

    def _succeed(self, batch: ProducerBatch, base_offset: int, append_time: int) -> None:
        self._settled(batch)
        if self.idempotence is not None and batch.base_sequence >= 0:
            self.idempotence.acknowledged(batch.tp, batch.base_sequence, len(batch.records))
        self.accumulator.complete(batch, base_offset, append_time, None)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self._settled(batch)
        if self.idempotence is not None and batch.base_sequence >= 0:
            # Its sequence will never be acknowledged: later batches would wait
            # for it forever. A new epoch starts the sequences afresh.
            self.idempotence.bump_needed = True
        if self.transactions is not None and isinstance(error, KafkaError):
            self.transactions.manager.note_abortable(error)
        self.accumulator.complete(batch, -1, -1, error)

    def _on_error(self, batch: ProducerBatch, error: ErrorCode, message: str | None) -> None:
        idem = self.idempotence
        if error == ErrorCode.duplicate_sequence_number:
            self._succeed(batch, -1, -1)  # stored before; its offset is no longer known
            return
        if (
            error == ErrorCode.out_of_order_sequence_number
            and idem is not None
            and idem.stored(batch.tp, batch.base_sequence, len(batch.records))
        ):
            self._succeed(batch, -1, -1)
            return
        if (
            error == ErrorCode.out_of_order_sequence_number
            and idem is not None
            and not idem.is_next_in_line(batch.tp, batch.base_sequence)
        ):
            # An earlier batch failed and will be retried first; follow it.
            self._retry_or_fail(batch, error, message)
            return
        if self.transactions is not None and error in _FENCED:
            fenced = FatalTransactionError(error, message or f"producing to {batch.tp}")
            self.transactions.manager.note_fatal(fenced)
            self._fail(batch, fenced)
            return
        if (
            error == ErrorCode.unknown_producer_id
            and idem is not None
            and self.transactions is None
        ):
            idem.bump_needed = True
            batch.base_sequence = -1
            self._retry_or_fail(batch, error, message)
            return
        if error in _REFRESH_ON:
            self.metadata_stale = True
        if error.retriable:
            self._retry_or_fail(batch, error, message)
        else:
            self._fail(batch, KafkaError(error, message or f"producing to {batch.tp}"))

    def _retry_or_fail(self, batch: ProducerBatch, error: ErrorCode, message: str | None) -> None:
        now = self._clock()
        if batch.attempts >= self.config.retries or now - batch.created >= self._delivery_timeout:
            self._fail(batch, KafkaError(error, message or f"producing to {batch.tp}"))
            return
        self._settled(batch)
        log.debug("retrying %s after %s", batch.tp, error.name)
        self.accumulator.requeue(batch, now + self._backoff)

    # -- producer id and metadata -------------------------------------------

    async def _init_producer_id(self) -> bool:
        idem = self.idempotence
        assert idem is not None
        bump = idem.has_producer_id
        try:
            conn = await self.cluster.any_connection()
            response = await asyncio.wait_for(
                conn.send(
                    InitProducerIdRequest(
                        transactional_id=None,
                        transaction_timeout=_ms(60000),
                        producer_id=ProducerId(idem.producer_id if bump else -1),
                        producer_epoch=i16(idem.epoch if bump else -1),
                    ),
                    version=conn.version_for(apis.INIT_PRODUCER_ID, 0, 4),
                ),
                self.config.request_timeout_ms / 1000,
            )
        except OSError as e:
            log.info("InitProducerId failed: %r", e)
            return False
        if response.error_code != ErrorCode.none:
            if response.error_code.retriable:
                return False
            raise KafkaError(response.error_code, "InitProducerId failed")
        idem.set_producer(response.producer_id, response.producer_epoch)
        for batch in self.accumulator.queued():
            batch.base_sequence = -1  # renumbered under the new epoch, in queue order
        log.info("producer id %s epoch %s", response.producer_id, response.producer_epoch)
        return True

    async def _maybe_refresh_metadata(self, now: float) -> bool:
        """Refresh when something looked stale or the metadata aged; True if that failed."""
        aged = now - self._metadata_refreshed_at >= self.config.metadata_max_age_ms / 1000
        if not (self.metadata_stale or aged) or not self.topics:
            return False
        try:
            await self.cluster.refresh(sorted(self.topics), auto_create=True)
        except OSError as e:
            log.info("metadata refresh failed: %r", e)
            return True
        self.metadata_stale = False
        self._metadata_refreshed_at = now
        return False

    async def close(self) -> None:
        """Send what is left, then stop (the caller bounds how long that may take)."""
        self._running = False
        self.wakeup()

    def abort(self, error: BaseException) -> None:
        self._running = False
        self.accumulator.abort_all(error)
        for batches in self._batches_in_flight.values():
            for batch in list(batches):
                self.accumulator.complete(batch, -1, -1, error)
            batches.clear()
        for task in self._tasks:
            task.cancel()
        self.wakeup()
