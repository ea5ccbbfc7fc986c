"""Idempotent producer state of one partition (Kafka's ProducerStateManager).

For every producer id seen in the log the partition remembers the producer's
epoch and the metadata of its last five batches (Kafka's producers keep at most
five requests in flight, so a retry is always one of them). Appending a batch
with a producer id:

- an epoch below the known one is fenced:                 INVALID_PRODUCER_EPOCH
- a batch whose sequence range equals a cached one (same epoch) is a duplicate: it
  is not written again and the original offsets are returned
- a new, higher epoch must start at sequence 0, else       OUT_OF_ORDER_SEQUENCE_NUMBER
- the same epoch must continue at last sequence + 1 (int32 max wraps to 0), else
  OUT_OF_ORDER_SEQUENCE_NUMBER
- an unknown producer id starts its state with whatever sequence it sends (as in
  Kafka 3.x, where the producer may have been expired or its data deleted)

Producers idle for ``producer.id.expiration.ms`` are dropped (``expire``, run
periodically by ``storage/producer_expiry.py``), which bounds the state; never a
producer whose transaction is still open.

Transactions: a producer's first transactional batch opens its transaction
(its offset is remembered, and the oldest open transaction's first offset is the
last stable offset); a control batch (commit or abort marker, ``complete_txn``)
closes it. A marker from an older producer epoch is refused with
INVALID_PRODUCER_EPOCH, one from an older transaction coordinator epoch with
TRANSACTION_COORDINATOR_FENCED.

The state is rebuilt at open from the last snapshot plus the batch headers after
it. Snapshots (``<offset>.snapshot``) are this project's own format: a magic, a
CRC32C of the rest, then each producer with its cached batches. Version 2
adds each producer's coordinator epoch and open transaction's first offset;
version 1 snapshots (no transactions) are still read.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Container, Iterable
from typing import NamedTuple

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader
from kgroups.records.checksum import crc32c

__all__ = [
    "BatchMetadata",
    "CompletedTxn",
    "ProducerEntry",
    "ProducerStateManager",
]

MAX_CACHED_BATCHES = 5
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"

_SNAPSHOT_MAGIC = b"KGPS"
_SNAPSHOT_HEAD = struct.Struct(">4shIi")  # magic, version, crc, producer count
_PRODUCER_V1 = struct.Struct(">qhb")  # producer id, epoch, batch count
# producer id, epoch, coordinator epoch, open transaction's first offset, batch count
_PRODUCER = struct.Struct(">qhiqb")
_SNAPSHOT_VERSION = 2
# A transactional data batch has the first bit, not the second (a marker has both).
_TXN_BITS = TRANSACTIONAL_MASK | CONTROL_MASK
_BATCH = struct.Struct(">iiqqq")  # first seq, last seq, first offset, last offset, ts
# NamedTuples built straight from tuples: the class call is a slow Python function.
_new_tuple = tuple.__new__


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's
    aborted: bool


class ProducerEntry:
    __slots__ = ("batches", "coordinator_epoch", "epoch", "producer_id", "txn_first_offset")

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=MAX_CACHED_BATCHES)
        self.coordinator_epoch = -1
        # First offset of the producer's open transaction, -1 when none is open.
        self.txn_first_offset = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_timestamp(self) -> int:
        return self.batches[-1].timestamp if self.batches else -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def copy(self) -> ProducerEntry:
        entry = ProducerEntry(self.producer_id, self.epoch)
        entry.batches.extend(self.batches)
        entry.coordinator_epoch = self.coordinator_epoch
        entry.txn_first_offset = self.txn_first_offset
        return entry


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # Producer id -> first offset of its open transaction.
        self.ongoing: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # -- the append path ------------------------------------------------------

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Check a client batch against the state; returns a duplicate's metadata.

        Raises INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER.
        """
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        epoch = header.producer_epoch
        first_seq = header.base_sequence
        if epoch == entry.epoch:
            batches = entry.batches
            if batches and first_seq == batches[-1].last_seq + 1:
                return None  # the common case: the next batch in sequence
            duplicate = entry.find_duplicate(epoch, first_seq, header.last_sequence)
            if duplicate is not None:
                return duplicate
            if batches and not _in_sequence(entry.last_seq, first_seq):
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"out of order sequence number for producer {header.producer_id} at epoch "
                    f"{epoch}: {first_seq} (incoming seq. number), {entry.last_seq} "
                    "(current end sequence number)",
                )
            return None
        if epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"epoch of producer {header.producer_id} is {epoch}, which is smaller than "
                f"the last seen epoch {entry.epoch}",
            )
        if first_seq != 0:
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"invalid sequence number for new epoch {epoch} of producer "
                f"{header.producer_id}: {first_seq} (must be 0)",
            )
        return None

    def update(self, header: BatchHeader, first_offset: int, timestamp: int) -> None:
        """Record a batch that is now in the log (appended, or found while loading)."""
        producer_id = header.producer_id
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id, header.producer_epoch)
        elif header.producer_epoch != entry.epoch:
            if header.producer_epoch < entry.epoch:
                return  # only reachable when replaying a log written out of order
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        if header.attributes & _TXN_BITS == TRANSACTIONAL_MASK and entry.txn_first_offset < 0:
            entry.txn_first_offset = self.ongoing[producer_id] = first_offset
        if header.base_sequence < 0:
            return  # e.g. a transaction marker: it moves the epoch, not the sequence
        metadata: BatchMetadata = _new_tuple(
            BatchMetadata,
            (
                header.base_sequence,
                header.last_sequence,
                first_offset,
                first_offset + header.last_offset_delta,
                timestamp,
            ),
        )
        entry.batches.append(metadata)

    def check_all(
        self, batches: Iterable[tuple[BatchHeader, int, int]]
    ) -> tuple[dict[int, ProducerEntry], BatchMetadata | None]:
        """Check several batches, each against the state the earlier ones leave.

        ``batches`` holds ``(header, first offset, max timestamp)``. Returns the
        producers' new entries to ``commit`` once written, or the first duplicate.
        """
        scratch = ProducerStateManager()
        for header, first_offset, timestamp in batches:
            if header.producer_id < 0:
                continue
            pid = header.producer_id
            if pid not in scratch.producers and pid in self.producers:
                scratch.producers[pid] = self.producers[pid].copy()
            duplicate = scratch.check(header)
            if duplicate is not None:
                return {}, duplicate
            scratch.update(header, first_offset, timestamp)
        return scratch.producers, None

    def commit(self, entries: dict[int, ProducerEntry]) -> None:
        self.producers.update(entries)
        for pid, entry in entries.items():
            if entry.txn_first_offset >= 0:
                self.ongoing[pid] = entry.txn_first_offset

    # -- transactions ---------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, None if none is open."""
        return min(self.ongoing.values()) if self.ongoing else None

    def in_transaction(self, producer_id: int) -> bool:
        return producer_id in self.ongoing

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Raise if a marker from this producer epoch and coordinator epoch is stale."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"transaction marker of producer {producer_id} has epoch {producer_epoch}, "
                f"older than the current epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"transaction marker of producer {producer_id} comes from coordinator epoch "
                f"{coordinator_epoch}, older than {entry.coordinator_epoch}",
            )

    def complete_txn(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        offset: int,
    ) -> CompletedTxn:
        """A marker at ``offset`` ends the producer's transaction (appended, or
        found while loading)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id, producer_epoch)
        elif producer_epoch > entry.epoch:
            entry.epoch = producer_epoch
            entry.batches.clear()
        first = entry.txn_first_offset if entry.txn_first_offset >= 0 else offset
        entry.txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        self.ongoing.pop(producer_id, None)
        return CompletedTxn(producer_id, first, offset, not commit)

    # -- maintenance --------------------------------------------------------------

    def expire(self, now_ms: int, expiration_ms: int, keep: Container[int] = ()) -> int:
        """Forget producers silent for ``expiration_ms`` (producer.id.expiration.ms),
        except those in ``keep``.

        As in Kafka, a producer's last write is the timestamp of its last batch
        (the broker's clock for LogAppendTime topics). Returns how many went.
        """
        ongoing = self.ongoing
        expired = [
            pid
            for pid, entry in self.producers.items()
            if now_ms - entry.last_timestamp >= expiration_ms
            and pid not in ongoing
            and pid not in keep
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()

    # -- snapshots ---------------------------------------------------------------------

    def to_snapshot(self) -> bytes:
        body = bytearray()
        for entry in self.producers.values():
            body += _PRODUCER.pack(
                entry.producer_id,
                entry.epoch,
                entry.coordinator_epoch,
                entry.txn_first_offset,
                len(entry.batches),
            )
            for batch in entry.batches:
                body += _BATCH.pack(*batch)
        head = _SNAPSHOT_HEAD.pack(
            _SNAPSHOT_MAGIC, _SNAPSHOT_VERSION, crc32c(body), len(self.producers)
        )
        return head + bytes(body)

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        """Parse a snapshot; ValueError if it is not a whole, valid one."""
        if len(data) < _SNAPSHOT_HEAD.size:
            raise ValueError("snapshot too short")
        magic, version, crc, count = _SNAPSHOT_HEAD.unpack_from(data, 0)
        body = memoryview(data)[_SNAPSHOT_HEAD.size :]
        if magic != _SNAPSHOT_MAGIC or version not in (1, 2):
            raise ValueError("not a producer state snapshot")
        if crc32c(body) != crc:
            raise ValueError("snapshot CRC mismatch")
        state = cls()
        pos = _SNAPSHOT_HEAD.size
        try:
            for _ in range(count):
                if version == 1:
                    pid, epoch, n = _PRODUCER_V1.unpack_from(data, pos)
                    pos += _PRODUCER_V1.size
                    entry = ProducerEntry(pid, epoch)
                else:
                    pid, epoch, coordinator_epoch, txn_first, n = _PRODUCER.unpack_from(data, pos)
                    pos += _PRODUCER.size
                    entry = ProducerEntry(pid, epoch)
                    entry.coordinator_epoch = coordinator_epoch
                    if txn_first >= 0:
                        entry.txn_first_offset = state.ongoing[pid] = txn_first
                for _b in range(n):
                    entry.batches.append(BatchMetadata._make(_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                state.producers[pid] = entry
        except struct.error as exc:
            raise ValueError(f"truncated snapshot: {exc}") from exc
        if pos != len(data):
            raise ValueError("trailing bytes in snapshot")
        return state
