"""Records waiting to be sent, grouped into batches per partition (the Java client's
RecordAccumulator).

send() appends to the last open batch of the record's partition, or starts a
new one; a batch is *ready* once it holds ``batch.size`` bytes, once it waited
``linger.ms``, or when a flush or close wants everything out. The sender drains
ready batches; a batch drained once takes no more records. Batches to retry
come back to the front of their queue in sequence order, so that a partition's
batches always go out in the order they were made.

Appends come from application threads and drains from the I/O loop, hence the
lock; ``buffer.memory`` bounds the bytes held, and appends wait for room.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.delivery import BatchOutcome, DeliveryFuture
from kgroups.records.batch import HEADER_SIZE, Header, RecordInput, encode_batch

__all__ = ["PendingRecord", "ProducerBatch", "RecordAccumulator", "record_size"]

# A record's framing at most: length, attributes, timestamp and offset deltas,
# key and value lengths, header count (varints).
_RECORD_OVERHEAD = 21


class PendingRecord(NamedTuple):
    """A record checked by the producer, on its way into a batch."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int
    size: int
    """Its bytes at most, as ``record_size`` counts them."""


def record_size(key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
    size = _RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    for name, data in headers:
        size += 10 + len(name) + (len(data) if data else 0)
    return size


class ProducerBatch:
    __slots__ = (
        "_encoded",
        "attempts",
        "base_sequence",
        "closed",
        "created",
        "next_attempt",
        "outcome",
        "records",
        "size",
        "tp",
    )

    def __init__(self, tp: TopicPartition, created: float) -> None:
        self.tp = tp
        self.records: list[RecordInput] = []
        self.size = HEADER_SIZE
        self.created = created
        self.outcome = BatchOutcome()
        self.closed = False
        self.attempts = 0
        self.next_attempt = 0.0
        self.base_sequence = -1
        self._encoded: tuple[tuple[int, int, int, int, bool], bytes] | None = None

    def encode(
        self, compression: int, producer_id: int, epoch: int, transactional: bool = False
    ) -> bytes:
        """The wire bytes; the same on a retry unless the producer epoch changed."""
        key = (compression, producer_id, epoch, self.base_sequence, transactional)
        if self._encoded is None or self._encoded[0] != key:
            data = encode_batch(
                self.records,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=self.base_sequence,
                is_transactional=transactional,
            )
            self._encoded = (key, data)
        return self._encoded[1]


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: int,
        buffer_memory: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.buffer_memory = buffer_memory
        self._clock = clock
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._bytes = 0
        self._incomplete: set[ProducerBatch] = set()
        self._flushes = 0
        self.closing = False
        self.wakeup: Callable[[], None] = lambda: None
        """Set by the sender: wakes it (from any thread) when a batch may be ready."""
        self._room_waiters: list[asyncio.Future[None]] = []

    # -- appending -----------------------------------------------------------

    def try_append(self, tp: TopicPartition, record: PendingRecord) -> DeliveryFuture | None:
        """Append if ``buffer.memory`` has room (None otherwise)."""
        with self._lock:
            if self._no_room_for(record.size):
                return None
            return self._append(tp, record)

    def append_blocking(
        self, tp: TopicPartition, record: PendingRecord, timeout: float
    ) -> DeliveryFuture:
        """Append, waiting up to ``timeout`` for room (an application thread's way)."""
        deadline = self._clock() + timeout
        with self._room:
            while self._no_room_for(record.size):
                remaining = deadline - self._clock()
                if remaining <= 0 or not self._room.wait(remaining):
                    raise TimeoutError(f"no room in buffer.memory within {timeout:.3f} s")
            return self._append(tp, record)

    def _no_room_for(self, size: int) -> bool:
        # A record always fits an empty buffer: the producer refuses larger ones.
        return self._bytes + size > self.buffer_memory and self._bytes > 0

    async def wait_for_room(self, timeout: float) -> None:
        """For the loop's own sends: wait until some batch completes."""
        waiter = asyncio.get_running_loop().create_future()
        with self._lock:
            self._room_waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            raise TimeoutError(f"no room in buffer.memory within {timeout:.3f} s") from None

    def _append(self, tp: TopicPartition, record: PendingRecord) -> DeliveryFuture:
        key, value, headers, timestamp, size = record
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        batch = queue[-1] if queue else None
        started = False
        if batch is None or batch.closed or (batch.records and batch.size + size > self.batch_size):
            batch = ProducerBatch(tp, self._clock())
            queue.append(batch)
            self._incomplete.add(batch)
            started = True
        index = len(batch.records)
        batch.records.append((key, value, headers, timestamp))
        batch.size += size
        self._bytes += size
        # The sender sleeps until the oldest batch lingers out; a new batch or
        # a full one changes that.
        if started or batch.size >= self.batch_size:
            self.wakeup()
        return DeliveryFuture(
            batch.outcome,
            index,
            tp.topic,
            tp.partition,
            timestamp,
            len(key) if key is not None else -1,
            len(value) if value is not None else -1,
        )

    # -- draining ------------------------------------------------------------

    def ready(self, now: float) -> tuple[list[TopicPartition], float]:
        """Partitions whose first batch may go now, and how long until the next
        one might (seconds; inf when nothing waits)."""
        ready: list[TopicPartition] = []
        next_check = float("inf")
        with self._lock:
            urgent = self.closing or self._flushes > 0
            for tp, queue in self._queues.items():
                if not queue:
                    continue
                head = queue[0]
                if head.attempts and head.next_attempt > now:
                    next_check = min(next_check, head.next_attempt - now)
                    continue
                due = head.created + self.linger
                if (
                    urgent
                    or head.closed
                    or len(queue) > 1
                    or head.size >= self.batch_size
                    or due <= now
                ):
                    ready.append(tp)
                else:
                    next_check = min(next_check, due - now)
        return ready, next_check

    def peek(self, tp: TopicPartition) -> ProducerBatch | None:
        with self._lock:
            queue = self._queues.get(tp)
            return queue[0] if queue else None

    def drain(self, tp: TopicPartition) -> ProducerBatch | None:
        with self._lock:
            queue = self._queues.get(tp)
            if not queue:
                return None
            batch = queue.popleft()
            batch.closed = True
            return batch

    def requeue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a batch back for another attempt, ahead of newer batches."""
        with self._lock:
            batch.attempts += 1
            batch.next_attempt = retry_at
            queue = self._queues.setdefault(batch.tp, deque())
            position = 0
            # Among batches already waiting to retry, keep sequence order.
            while (
                position < len(queue)
                and queue[position].attempts
                and 0 <= queue[position].base_sequence < batch.base_sequence
            ):
                position += 1
            queue.insert(position, batch)
        self.wakeup()

    def queued(self) -> list[ProducerBatch]:
        with self._lock:
            return [b for q in self._queues.values() for b in q]

    def expire(self, now: float, delivery_timeout: float) -> list[ProducerBatch]:
        """Remove the batches that waited longer than delivery.timeout.ms."""
        expired = []
        with self._lock:
            for queue in self._queues.values():
                while queue and now - queue[0].created >= delivery_timeout:
                    expired.append(queue.popleft())
        return expired

    def complete(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time: int,
        error: BaseException | None,
    ) -> None:
        """Settle a batch's futures and give its bytes back."""
        batch.outcome.complete(base_offset, log_append_time, error)
        with self._room:
            self._incomplete.discard(batch)
            self._bytes -= batch.size - HEADER_SIZE
            self._room.notify_all()
            waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- flushing and closing -----------------------------------------------

    def begin_flush(self) -> list[BatchOutcome]:
        """Make every batch ready now; returns the outcomes to wait for."""
        with self._lock:
            self._flushes += 1
            outcomes = [b.outcome for b in self._incomplete]
        self.wakeup()
        return outcomes

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def has_unsent(self) -> bool:
        with self._lock:
            return any(self._queues.values())

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def abort_all(self, error: BaseException) -> None:
        for batch in self.queued():
            with self._lock:
                queue = self._queues.get(batch.tp)
                if queue is not None and batch in queue:
                    queue.remove(batch)
            self.complete(batch, -1, -1, error)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"bytes": self._bytes, "batches": len(self._incomplete)}
