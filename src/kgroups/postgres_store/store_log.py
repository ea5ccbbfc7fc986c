"""A partition this broker leads in cluster mode: its log lives in the store.

The leader is the only writer at its leader epoch, so it assigns offsets
itself, in memory, exactly as a local log does; what a local log's fsync is
to durability, a commit to the store is here. ``append`` validates and stamps
the batches and keeps them as *pending*; the store writer (``store_writer``)
takes every log's pending batches and commits them in one transaction, each
partition's conditional on the store's log ending where this leader's first
pending offset is. Only committed batches are visible (the high watermark is
the store's log end), so a reader never sees a write that may be lost.

The most recent committed batches are kept in memory to serve the fetches of
consumers that keep up; older offsets are read from the store
(``NotInMemory``). A failed commit ends this object: the broker drops it
and, if it still leads the partition, starts again from the store's log end.

Every batch is stamped with this leader's epoch, which begins where the log
ended when the leader took it (``epoch_start``): the leader answers its own
epoch's end (OffsetForLeaderEpoch) from memory, and older epochs, which are in
the batches before it, from the store (``epoch_reads``).

Transactions are served as on a local log: a transactional batch opens its
producer's transaction (``producers``), a commit or abort marker
(``append_marker``) is a control batch appended and committed like any other,
and ends it. The last stable offset counts only what the store committed
(``store_txns``): a transaction ended by a marker not yet committed still
holds it back. An abort's entry in the aborted transaction index
(``aborted_txns``) is committed with its marker; each producer's open
transaction is committed with its row (``producer_states``), so a new leader
starts from the same last stable offset.
"""

from __future__ import annotations

from collections import deque

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.partitions.leader_epochs import NO_EPOCH, EpochEndOffset, LeaderEpochs
from kgroups.partitions.log import NotInMemory, TimestampOffset
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import AppendResult, StampingLog, record_producers, stamp
from kgroups.postgres_store.aborted_txns import AbortedTxn
from kgroups.postgres_store.appends import Append
from kgroups.postgres_store.producer_states import producer_row
from kgroups.postgres_store.store_txns import StoreTransactions
from kgroups.records.control import encode_marker
from kgroups.records.file_region import FileRegion
from kgroups.records.timestamps import timestamp_in

# Committed bytes kept in memory per partition for fetches at the tail.
TAIL_BYTES = 4 * 1024 * 1024


class StoreLog(StampingLog):
    def __init__(
        self,
        topic: str,
        partition: int,
        leader_epoch: int,
        log_start_offset: int,
        next_offset: int,
        config: LogConfig,
        producers: ProducerStateManager | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.config = config
        self.producers = producers if producers is not None else ProducerStateManager()
        self._log_start = log_start_offset
        # Batches from here on are at leader_epoch: it starts here, or earlier
        # if this broker led at it before and its log was started again.
        self.epoch_start = next_offset
        self._start_epoch: tuple[int, int] | None = None  # (log start, its epoch), from the store
        self._committed = next_offset  # the high watermark: what the store holds
        self._next = next_offset  # the log end: offsets assigned here
        # (base offset, last offset, max timestamp, bytes): assigned, not yet committed.
        self._pending: list[tuple[int, int, int, bytes]] = []
        self._sending = 0  # how many of _pending are in a transaction now
        self._tail: deque[tuple[int, int, int, bytes]] = deque()
        self._tail_bytes = 0
        # Producers whose state changed since the last take_pending.
        self._changed_producers: set[int] = set()
        # Aborts and ends of transactions, as far as the store committed them.
        self.txns = StoreTransactions(next_offset)
        self.failed: KafkaError | None = None

    # -- what the handlers read ---------------------------------------------
    # The offsets every PartitionLog answers, here from what the store
    # committed: alike in shape to SegmentLog's, but read from other state.

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def high_watermark(self) -> int:
        return self._committed

    @property
    def log_end_offset(self) -> int:
        """As seen by readers: only committed offsets exist for them."""
        return self._committed

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest transaction open or ended by a marker
        not yet committed, else the high watermark (never below the log start:
        retention may delete a transaction's start)."""
        lso = self._committed
        for first in (self.producers.first_unstable_offset(), self.txns.first_unsettled()):
            if first is not None:
                lso = min(lso, max(first, self._log_start))
        return lso

    def aborted_transactions(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        [start, end); ``NotInMemory`` when older aborts may be among them."""
        return self.txns.aborted(start, end)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> int:
        """Append a commit or abort marker ending the producer's transaction; its
        offset. Committed to the store like any append (``appended``).

        INVALID_PRODUCER_EPOCH for an older producer epoch, TRANSACTION_COORDINATOR_FENCED
        for an older coordinator epoch than the producer's last marker.
        """
        if self.failed is not None:
            raise self.failed
        producers = self.producers
        producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        marker = encode_marker(producer_id, producer_epoch, coordinator_epoch, commit, now_ms)
        offset = self.append(marker, now_ms, from_client=False).base_offset
        done = producers.complete_txn(
            producer_id, producer_epoch, coordinator_epoch, commit, offset
        )
        entry = None
        if done.aborted:
            unstable = producers.first_unstable_offset()
            lso = offset + 1 if unstable is None else unstable
            entry = AbortedTxn(producer_id, done.first_offset, offset, lso)
        self.txns.ended(done.first_offset, offset, entry)
        return offset

    @property
    def offline(self) -> bool:
        return False

    @property
    def size(self) -> int | None:
        """Unknown here: the store holds the partition's bytes."""
        return None

    @property
    def rolled_since_flush(self) -> bool:
        return False

    def needs_flush(self, now_ms: int) -> bool:
        return True  # every append is committed before it is acknowledged

    # -- appending -------------------------------------------------------------

    def append(
        self, payload: bytes | bytearray | memoryview, now_ms: int, *, from_client: bool = True
    ) -> AppendResult:
        if self.failed is not None:
            raise self.failed
        first = self._next
        stamped = stamp(self, payload, first, now_ms, from_client=from_client)
        if isinstance(stamped, AppendResult):
            return stamped  # a duplicate
        buf, _batches, metas, _pending, log_append_time = stamped
        view = bytes(buf)
        offset = first
        for pos, size, last, max_ts in metas:
            self._pending.append((offset, last, max_ts, view[pos : pos + size]))
            offset = last + 1
        self._next = offset
        record_producers(self.producers, stamped)
        for _pos, header in stamped.batches:
            if header.producer_id >= 0:
                self._changed_producers.add(header.producer_id)
        return AppendResult(
            first, offset - 1, -1 if log_append_time is None else log_append_time, self._log_start
        )

    # -- the store writer's side ---------------------------------------------

    def take_pending(self) -> Append | None:
        """The pending batches not yet sent, as one conditional append."""
        if self.failed is not None or self._sending == len(self._pending):
            return None
        unsent = self._pending[self._sending :]
        self._sending = len(self._pending)
        # Nothing of this log is in flight: the state is what these batches leave.
        producers = []
        for producer_id in self._changed_producers:
            entry = self.producers.get(producer_id)
            if entry is not None:
                producers.append(producer_row(entry))
        self._changed_producers.clear()
        return Append(
            self.topic,
            self.partition,
            self.leader_epoch,
            [b[3] for b in unsent],
            expected_base=unsent[0][0],
            producers=producers,
            aborted=self.txns.unsent_aborts(unsent[0][0]),
        )

    def committed(self, last_offset: int) -> None:
        """The store committed everything up to ``last_offset``."""
        done = 0
        for entry in self._pending:
            if entry[1] > last_offset:
                break
            done += 1
            self._tail.append(entry)
            self._tail_bytes += len(entry[3])
        del self._pending[:done]
        self._sending -= done
        self._committed = last_offset + 1
        self.txns.committed(last_offset)
        if self._tail_bytes > TAIL_BYTES:
            while self._tail_bytes > TAIL_BYTES and len(self._tail) > 1:
                self._tail_bytes -= len(self._tail.popleft()[3])
            self.txns.forget_below(self._tail[0][0])

    def advance_log_start(self, offset: int) -> None:
        """The store's log start moved to ``offset`` (retention, DeleteRecords)."""
        if offset <= self._log_start:
            return
        self._log_start = offset
        while self._tail and self._tail[0][1] < offset:
            self._tail_bytes -= len(self._tail.popleft()[3])
        # As Kafka deletes the index entries with their segments.
        self.txns.forget_below(offset)

    def compacted(self, end: int) -> None:
        """The store rewrote batches below ``end``: read those from the store."""
        while self._tail and self._tail[0][0] < end:
            self._tail_bytes -= len(self._tail.popleft()[3])

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget idle producers (``ProducerStateManager.expire``), but not one
        whose new state is still to be sent: its row would never be updated."""
        return self.producers.expire(now_ms, expiration_ms, keep=self._changed_producers)

    def fail(self, error: KafkaError) -> None:
        """A commit failed or its outcome is unknown: this log is over."""
        self.failed = error
        self._pending.clear()
        self._sending = 0
        self.txns.clear_unsettled()

    # -- reading ---------------------------------------------------------------

    # PartitionLog.read's signature, restated: the fetch path reads either log alike.
    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> bytes:
        """Committed batches from the one holding ``offset``, as PartitionLog.read;
        ``NotInMemory`` when they are not in memory."""
        end = self._committed if max_offset is None else min(max_offset, self._committed)
        if offset < self._log_start or offset > self._next:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is outside [{self._log_start}, {self._committed}] "
                f"of {self.topic}-{self.partition}",
            )
        if offset >= end:
            return b""
        if not self._tail or offset < self._tail[0][0]:
            raise NotInMemory
        out: list[bytes] = []
        size = 0
        for base, last, _ts, batch in self._tail:
            if last < offset:
                continue
            if base >= end or (size + len(batch) > max_bytes and (out or not min_one)):
                break
            out.append(batch)
            size += len(batch)
        return b"".join(out)

    def read_region(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> FileRegion | bytes:
        """As ``read``: the store's batches are in no file."""
        return self.read(offset, max_bytes, max_offset, min_one=min_one)

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        raise NotInMemory

    def max_timestamp_offset(self) -> TimestampOffset | None:
        raise NotInMemory

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """Answered here for this leader's epoch (and those after it), or when
        nothing older than it is left; older epochs are in the store's batches."""
        if epoch < self.leader_epoch and epoch != NO_EPOCH and self._log_start < self.epoch_start:
            raise NotInMemory
        return self._own_epoch().end_offset_for(epoch, self._log_start, self._committed)

    def log_start_epoch(self) -> int:
        if self._log_start >= self.epoch_start:
            return self.leader_epoch
        if self._start_epoch is not None and self._start_epoch[0] == self._log_start:
            return self._start_epoch[1]
        raise NotInMemory

    def learnt_start_epoch(self, log_start: int, epoch: int) -> None:
        """The store's answer for ``log_start``, kept while the log starts there
        (ListOffsets earliest is asked of every partition, over and over)."""
        self._start_epoch = (log_start, epoch)

    def _own_epoch(self) -> LeaderEpochs:
        known = LeaderEpochs()
        known.assign(self.leader_epoch, self.epoch_start)
        return known

    def record_timestamp(self, offset: int) -> int | None:
        """Estimated from the batch in memory that holds ``offset``; None when
        that batch is only in the store."""
        for base, last, _ts, batch in self._tail:
            if last >= offset:
                return timestamp_in(batch, offset) if base <= offset else None
        return None

    def __repr__(self) -> str:
        return f"StoreLog({self.topic}-{self.partition}, epoch {self.leader_epoch})"
