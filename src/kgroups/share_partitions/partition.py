"""One share partition: a topic partition as one share group consumes it.

Theory of operation
-------------------
Records between the share-partition start offset (SPSO) and the end offset
(the offset after the last one ever fetched) are *in flight*; each is
AVAILABLE, ACQUIRED by one member until its lock deadline, or final
(ACKNOWLEDGED, ARCHIVED). See states.py for the moves.

- ``acquire`` takes the log batches a fetch read from the next fetch offset
  (the first AVAILABLE record, else the end offset) and hands the member the
  AVAILABLE records among them and the new ones past the end offset, each
  delivery counted, each locked for ``record_lock_duration_ms``. New records
  are taken only while fewer than ``max_record_locks`` are in flight.
- ``acknowledge`` applies a member's ACCEPT, RELEASE, REJECT, GAP or RENEW
  to records it holds; one bad range refuses the whole call, as in Kafka.
- ``expire`` ends the deliveries whose locks are due, ``release_member`` those
  of a member that left: the records are AVAILABLE again, or ARCHIVED when
  their delivery count reached ``delivery_count_limit``.
- After each change the SPSO moves past the leading final records, and
  batches wholly before it are forgotten.
- ``tally`` (tally.py) counts the records by state as they move, for the
  metrics and the lag; a lock deadline's lower bound makes ``expire`` free
  when no lock is due.

Nothing here reads a clock or a log: times and batches are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kgroups.share_partitions.config import SharePartitionConfig
from kgroups.share_partitions.in_flight import Delivery, InFlightBatch
from kgroups.share_partitions.states import AcknowledgeType, RecordState
from kgroups.share_partitions.tally import DELIVERY_COUNT_LIMIT, GAP, REJECTED, RecordTally


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Offsets handed to a member in one delivery (ShareFetch's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """``types`` holds one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class SharePartition:
    def __init__(self, config: SharePartitionConfig, start_offset: int) -> None:
        self.config = config
        self.start_offset = start_offset
        self.end_offset = start_offset
        # Set when a state worth keeping changed (an acknowledgement, a
        # delivery ended, the start moved); whoever persists clears it.
        self.changed = False
        # In offset order: new batches are always added at the end offset.
        self._batches: dict[int, InFlightBatch] = {}
        self.tally = RecordTally()
        # No lock is due before this (None: no record is acquired).
        self._earliest_lock_ms: int | None = None

    # -- views ---------------------------------------------------------------

    def in_flight_count(self) -> int:
        return self.end_offset - self.start_offset

    def batch_count(self) -> int:
        """In-flight batches kept (Kafka's InFlightBatchCount)."""
        return len(self._batches)

    def next_fetch_offset(self) -> int:
        for batch in self._batches.values():
            for first, last, delivery in batch.deliveries():
                if delivery.state is RecordState.AVAILABLE and last >= self.start_offset:
                    return max(first, self.start_offset)
        return self.end_offset

    def holds_acquired(self) -> bool:
        """Whether any member holds records of it now."""
        return any(
            delivery.state is RecordState.ACQUIRED
            for batch in self._batches.values()
            for _first, _last, delivery in batch.deliveries()
        )

    def can_acquire(self) -> bool:
        """Whether a fetch may find something to acquire: AVAILABLE records,
        or room for new ones."""
        return (
            self.next_fetch_offset() < self.end_offset
            or self.in_flight_count() < self.config.max_record_locks
        )

    def record(self, offset: int) -> Delivery | None:
        """The state of one in-flight record (None: not in flight)."""
        batch = self._batch_of(offset)
        if batch is None:
            return None
        if batch.whole is not None:
            return batch.whole
        assert batch.offsets is not None
        return batch.offsets[offset]

    def batches(self) -> list[InFlightBatch]:
        return list(self._batches.values())

    def next_deadline(self) -> int | None:
        deadlines = [
            d.lock_deadline_ms
            for batch in self._batches.values()
            for _f, _l, d in batch.deliveries()
            if d.lock_deadline_ms is not None
        ]
        return min(deadlines, default=None)

    # -- acquiring -----------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        log_batches: Iterable[tuple[int, int]],
        now_ms: int,
        max_records: int,
        record_limit: bool = False,
        passed_over: Container[int] = (),
    ) -> list[AcquiredRange]:
        """Acquire for ``member_id`` what it may have among ``log_batches``
        ((base offset, last offset) of each batch read, in order). At least
        ``max_records`` are taken when there are that many; whole batches
        may take more, unless ``record_limit`` (KIP-1206's record-limit mode).
        The batches whose base offset is in ``passed_over`` (transaction
        markers, aborted transactions' records) are archived, never handed out."""
        deadline = now_ms + self.config.record_lock_duration_ms
        acquired: list[AcquiredRange] = []
        taken = 0
        for base, last in log_batches:
            if taken >= max_records:
                break
            if last < self.start_offset:
                continue
            if base in passed_over:
                self._pass_over(base, last)
                continue
            low = max(base, self.start_offset)
            budget = max_records - taken if record_limit else None
            if low < self.end_offset:
                high = min(last, self.end_offset - 1)
                taken += self._acquire_cached(member_id, low, high, deadline, budget, acquired)
            if last >= self.end_offset and taken < max_records:
                room = self.config.max_record_locks - self.in_flight_count()
                if room <= 0:
                    break
                first = max(base, self.end_offset)
                if record_limit:
                    last = min(last, first + min(room, max_records - taken) - 1)
                batch = InFlightBatch(first, last, Delivery(RecordState.AVAILABLE, 0))
                assert batch.whole is not None
                batch.whole.acquire(member_id, deadline)
                self.tally.acquire(1, last - first + 1)
                self._batches[first] = batch
                self.end_offset = last + 1
                acquired.append(AcquiredRange(first, last, 1))
                taken += last - first + 1
            if taken >= max_records:
                break  # before asking for another batch: reading one has a cost
        if acquired:
            self._lock_set(deadline)
        return _merged(acquired)

    def _acquire_cached(
        self,
        member_id: str,
        low: int,
        high: int,
        deadline: int,
        budget: int | None,
        acquired: list[AcquiredRange],
    ) -> int:
        taken = 0
        for batch in self._overlapping(low, high):
            if batch.whole is not None:
                if batch.whole.state is not RecordState.AVAILABLE:
                    continue
                first = max(low, batch.first)
                last = min(high, batch.last)
                if budget is not None:
                    if taken >= budget:
                        return taken
                    last = min(last, first + budget - taken - 1)
                part = self._carve(batch, first, last)
                assert part.whole is not None
                part.whole.acquire(member_id, deadline)
                self.tally.acquire(part.whole.delivery_count, last - first + 1)
                acquired.append(AcquiredRange(first, last, part.whole.delivery_count))
                taken += last - first + 1
                continue
            offsets = batch.split()
            for offset in range(max(low, batch.first), min(high, batch.last) + 1):
                if budget is not None and taken >= budget:
                    return taken
                delivery = offsets[offset]
                if delivery.state is RecordState.AVAILABLE:
                    delivery.acquire(member_id, deadline)
                    self.tally.acquire(delivery.delivery_count, 1)
                    acquired.append(AcquiredRange(offset, offset, delivery.delivery_count))
                    taken += 1
        return taken

    def _pass_over(self, base: int, last: int) -> None:
        low = max(base, self.start_offset)
        for batch in self._overlapping(low, min(last, self.end_offset - 1)):
            for first, end, delivery in batch.deliveries():
                if end >= low and first <= last and delivery.state is RecordState.AVAILABLE:
                    delivery.end(RecordState.ARCHIVED)
                    self.tally.complete(self._in_window(first, end))
        if last >= self.end_offset:
            first = max(low, self.end_offset)
            self._batches[first] = InFlightBatch(first, last, Delivery(RecordState.ARCHIVED, 0))
            self.tally.complete(last - first + 1)
            self.end_offset = last + 1
        self._advance_start()

    # -- acknowledging -------------------------------------------------------

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[AcknowledgementBatch],
        now_ms: int,
        renew_allowed: bool = True,
    ) -> ErrorCode:
        """Apply a member's acknowledgements, all or none; the error code
        the partition answers with."""
        error = self._check(member_id, batches, renew_allowed)
        if error is not ErrorCode.none:
            return error
        for ack in batches:
            if ack.last_offset < self.start_offset:
                continue
            for batch in self._overlapping(ack.first_offset, ack.last_offset):
                if batch.whole is not None and len(ack.types) == 1:
                    low = max(ack.first_offset, batch.first, self.start_offset)
                    part = self._carve(batch, low, min(ack.last_offset, batch.last))
                    assert part.whole is not None
                    size = self._in_window(part.first, part.last)
                    self._apply(part.whole, size, AcknowledgeType(ack.types[0]), now_ms)
                    continue
                offsets = batch.split()
                low = max(ack.first_offset, batch.first, self.start_offset)
                for offset in range(low, min(ack.last_offset, batch.last) + 1):
                    kind = ack.types[0 if len(ack.types) == 1 else offset - ack.first_offset]
                    self._apply(offsets[offset], 1, AcknowledgeType(kind), now_ms)
        self._advance_start()
        self.changed = True
        return ErrorCode.none

    def _check(
        self, member_id: str, batches: Sequence[AcknowledgementBatch], renew_allowed: bool
    ) -> ErrorCode:
        for ack in batches:
            size = ack.last_offset - ack.first_offset + 1
            if size <= 0 or len(ack.types) not in (1, size):
                return ErrorCode.invalid_request
            if any(t not in AcknowledgeType._value2member_map_ for t in ack.types):
                return ErrorCode.invalid_request
            if not renew_allowed and AcknowledgeType.RENEW in ack.types:
                return ErrorCode.invalid_request
            if ack.last_offset < self.start_offset:
                continue  # already past: nothing to do
            if ack.last_offset >= self.end_offset:
                return ErrorCode.invalid_record_state
            found = False
            for batch in self._overlapping(ack.first_offset, ack.last_offset):
                found = True
                low = max(ack.first_offset, batch.first, self.start_offset)
                high = min(ack.last_offset, batch.last)
                if batch.whole is not None:
                    states = [batch.whole]
                else:
                    assert batch.offsets is not None
                    states = [batch.offsets[o] for o in range(low, high + 1)]
                for delivery in states:
                    if (
                        delivery.state is not RecordState.ACQUIRED
                        or delivery.member_id != member_id
                    ):
                        return ErrorCode.invalid_record_state
            if not found:
                return ErrorCode.invalid_record_state
        return ErrorCode.none

    def _apply(self, delivery: Delivery, size: int, kind: AcknowledgeType, now_ms: int) -> None:
        """``size``: the records ``delivery`` stands for, from the start offset on."""
        if kind is AcknowledgeType.RENEW:
            delivery.lock_deadline_ms = deadline = now_ms + self.config.record_lock_duration_ms
            self._lock_set(deadline)
            return
        if kind is AcknowledgeType.RELEASE:
            self._end_delivery(delivery, size)
            return
        self.tally.unacquire(delivery.delivery_count, size)
        if kind is AcknowledgeType.ACCEPT:
            delivery.end(RecordState.ACKNOWLEDGED)
            self.tally.complete(size)
        else:  # REJECT, GAP
            delivery.end(RecordState.ARCHIVED)
            self.tally.archive(REJECTED if kind is AcknowledgeType.REJECT else GAP, size)

    def _end_delivery(self, delivery: Delivery, size: int) -> None:
        """A delivery that ended without an acknowledgement: offered again,
        unless that was its last allowed delivery."""
        self.tally.unacquire(delivery.delivery_count, size)
        if delivery.delivery_count >= self.config.delivery_count_limit:
            delivery.end(RecordState.ARCHIVED)
            self.tally.archive(DELIVERY_COUNT_LIMIT, size)
        else:
            delivery.end(RecordState.AVAILABLE)

    # -- locks and members ---------------------------------------------------

    def expire(self, now_ms: int) -> bool:
        """End the deliveries whose locks are due; whether any was. Free
        while no lock is due."""
        earliest = self._earliest_lock_ms
        if earliest is None or earliest > now_ms:
            return False
        released = False
        following: int | None = None
        for batch in self._batches.values():
            for first, last, delivery in batch.deliveries():
                if delivery.state is not RecordState.ACQUIRED:
                    continue
                deadline = delivery.lock_deadline_ms
                assert deadline is not None
                if deadline <= now_ms:
                    size = self._in_window(first, last)
                    self.tally.lock_timeouts += size
                    self._end_delivery(delivery, size)
                    released = True
                elif following is None or deadline < following:
                    following = deadline
        self._earliest_lock_ms = following
        if released:
            self._advance_start()
            self.changed = True
        return released

    def release_member(self, member_id: str) -> bool:
        """End the deliveries of a member that left; whether it held any."""
        return self._release(lambda d: d.member_id == member_id)

    def _release(self, due: Callable[[Delivery], bool]) -> bool:
        released = False
        for batch in self._batches.values():
            for first, last, delivery in batch.deliveries():
                if delivery.state is RecordState.ACQUIRED and due(delivery):
                    self._end_delivery(delivery, self._in_window(first, last))
                    released = True
        if released:
            self._advance_start()
            self.changed = True
        return released

    def _lock_set(self, deadline_ms: int) -> None:
        earliest = self._earliest_lock_ms
        if earliest is None or deadline_ms < earliest:
            self._earliest_lock_ms = deadline_ms

    # -- the start offset ----------------------------------------------------

    def _advance_start(self) -> None:
        """Past the leading final records (each counted in the tally as
        complete: they leave it)."""
        position = self.start_offset
        for batch in self._batches.values():
            if batch.last < position:
                continue
            unfinished = batch.first_unfinished(position)
            if unfinished is not None:
                position = unfinished
                break
            position = batch.last + 1
        else:
            position = max(position, self.end_offset)
        self.tally.delivery_complete -= position - self.start_offset
        self.start_offset = position
        for first in [f for f, b in self._batches.items() if b.last < position]:
            del self._batches[first]

    def add_in_flight(self, batch: InFlightBatch) -> None:
        """A batch of restored state, after every batch so far."""
        self._batches[batch.first] = batch
        self.end_offset = max(self.end_offset, batch.last + 1)

    def settle(self) -> None:
        """After a restore: the start offset moves past what is final."""
        self._recount()
        self._advance_start()

    def move_start(self, offset: int) -> None:
        """The log start moved past the SPSO (retention, DeleteRecords):
        records before it are gone."""
        if offset <= self.start_offset:
            return
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._recount()
        self._advance_start()
        self.changed = True

    def _recount(self) -> None:
        """The tally's gauges counted again, from the start offset on: after
        records went without a state change (a restore, the log start moving)."""
        tally = self.tally
        tally.clear_gauges()
        for batch in self._batches.values():
            for first, last, delivery in batch.deliveries():
                size = self._in_window(first, last)
                if size == 0:
                    continue
                if delivery.state is RecordState.ACQUIRED:
                    tally.acquire(delivery.delivery_count, size)
                elif delivery.state.final:
                    tally.complete(size)

    # -- lookups -------------------------------------------------------------

    def _in_window(self, first: int, last: int) -> int:
        """How many of the offsets ``first``..``last`` are at or past the start offset."""
        return max(0, last - max(first, self.start_offset) + 1)

    def _carve(self, batch: InFlightBatch, first: int, last: int) -> InFlightBatch:
        """The part ``[first, last]`` of a batch that moves as one, made a
        batch of its own; the parts before and after it stay whole too. A
        member acknowledging a few records at a time of a large batch then
        changes one state, not one per record."""
        if first <= batch.first and batch.last <= last:
            return batch
        assert batch.whole is not None
        # A part wholly before the start offset (moved into the batch by the
        # log start) is not in flight: it goes.
        parts = [
            InFlightBatch(a, b, batch.whole.copy())
            for a, b in ((batch.first, first - 1), (first, last), (last + 1, batch.last))
            if a <= b and b >= self.start_offset
        ]
        rebuilt: dict[int, InFlightBatch] = {}
        for key, b in self._batches.items():
            if b is batch:
                rebuilt.update((p.first, p) for p in parts)
            else:
                rebuilt[key] = b
        self._batches = rebuilt
        return next(p for p in parts if p.first == first)

    def _overlapping(self, low: int, high: int) -> list[InFlightBatch]:
        return [b for b in self._batches.values() if b.last >= low and b.first <= high]

    def _batch_of(self, offset: int) -> InFlightBatch | None:
        for batch in self._batches.values():
            if batch.first <= offset <= batch.last:
                return batch
        return None


def _merged(ranges: list[AcquiredRange]) -> list[AcquiredRange]:
    """Adjacent ranges of one delivery count as one."""
    merged: list[AcquiredRange] = []
    for r in ranges:
        last = merged[-1] if merged else None
        if (
            last is not None
            and last.last_offset + 1 == r.first_offset
            and last.delivery_count == r.delivery_count
        ):
            merged[-1] = AcquiredRange(last.first_offset, r.last_offset, r.delivery_count)
        else:
            merged.append(r)
    return merged
