"""The log of one topic-partition: a directory ``<topic>-<partition>`` of segments.

Theory of operation
-------------------
Offsets grow without gaps from ``log_start_offset`` to ``log_end_offset``; the
segments partition that range, the newest (the *active* segment) taking appends.
An append validates the producer's batches, checks idempotent-producer state,
stamps offsets into the payload (a Produce's records where they lie in the
request, anything else in a copy) and writes it with a single ``os.write``:
acknowledged produce requests survive ``kill -9``. Surviving power loss needs
``flush()`` (see ``log_flush``), which may run on a worker thread while the
event loop keeps appending.

With one replica, the high watermark is the log end offset. The last stable
offset (LSO) is the first offset of the oldest open transaction (else the high
watermark): read_committed consumers read up to it. ``append_marker`` ends a
transaction; aborted ones are listed in the segments' ``.txnindex`` files
(``txn_index``).

Opening (``log_open``) recovers what a crash may have left unchecked and
rebuilds the idempotent producer state and the aborted transaction index; an
append's checks and offset stamping are in ``partitions.stamping``, transaction
markers in ``log_markers``, reads in ``log_read``, fsync and what is left to
fsync in ``log_flush`` (``FlushingLog``), retention, truncation and compaction's swap in
``log_retention``, producer snapshots in ``producer_snapshots``, and the leader
epochs the batches carry in ``log_epochs``. This class keeps the segment list
and offsets, and says when the files change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.partitions.leader_epochs import EpochEndOffset, LeaderEpochs
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import AppendResult, StampingLog, record_producers, stamp
from kgroups.records.batch import RecordInput, encode_batch
from kgroups.records.file_region import FileRegion
from kgroups.storage.append_file import StorageOffline
from kgroups.storage.cleaner_checkpoint import lower_clean_offset
from kgroups.storage.log_epochs import epochs_of
from kgroups.storage.log_files import remove_log_directory
from kgroups.storage.log_flush import FlushingLog, FlushState
from kgroups.storage.log_markers import append_marker
from kgroups.storage.log_open import load_transaction_state, new_segment, open_segments
from kgroups.storage.log_read import (
    TimestampOffset,
    max_timestamp_offset,
    offset_for_timestamp,
    read_batches,
    record_timestamp,
    region_of_batches,
)
from kgroups.storage.log_retention import (
    delete_oldest,
    expired_segment_count,
    swap_in,
    truncate_segments,
)
from kgroups.storage.producer_snapshots import snapshot_at_close, snapshot_at_roll
from kgroups.storage.segment import Segment
from kgroups.storage.txn_index import TxnIndex

__all__ = ["AppendResult", "SegmentLog", "TimestampOffset"]

log = logging.getLogger(__name__)


class SegmentLog(StampingLog, FlushingLog):
    """Use ``SegmentLog.open``; the constructor takes already-opened segments."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[Segment],
        *,
        leader_epoch: int = 0,
        recovery_point: int = 0,
        log_start: int = 0,
    ) -> None:
        if not segments:
            raise ValueError("a log has at least one segment")
        self.directory = directory
        self.config = config
        self.leader_epoch = leader_epoch
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._active = segments[-1]
        self._next_offset = self._active.next_offset
        # At or after the first segment's base: DeleteRecords moves it within a
        # segment (checkpointed by the log manager), retention with whole ones.
        self._log_start = max(log_start, segments[0].base_offset)
        self.producers = ProducerStateManager()
        self.txn_index = TxnIndex(directory)
        self._closed = False
        # Set when the files can no longer be trusted to match memory (a failed
        # write that could not be undone, a failed fsync): no appends or reads
        # until the broker restarts and recovers the log.
        self._offline = False
        # Bumped when segments are removed or rewritten (not by appends or rolls),
        # so work planned against an older layout is not applied to this one.
        self._layout_version = 0
        # What was fsynced: its recovery_point is the offset below which all is.
        self.flushes = FlushState(min(recovery_point, self._next_offset))
        self._retired_files: list[Path] = []
        self._epochs: LeaderEpochs | None = None  # read back when first asked (log_epochs)

    # -- opening ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        now_ms: int,
        *,
        recover: bool = True,
        recovery_point: int = 0,
        leader_epoch: int = 0,
        log_start: int = 0,
    ) -> SegmentLog:
        """Open (or create) the log in ``directory``.

        With ``recover`` (after a crash) every segment that may hold offsets at or
        above ``recovery_point`` is checked batch by batch. ``recover=False``
        trusts the files (after a clean shutdown: all of them were fsynced).
        ``log_start`` is the checkpointed log start (DeleteRecords); past the
        log end, the log restarts empty there (as Kafka's LogLoader does).
        """
        segments = open_segments(
            directory,
            config,
            now_ms,
            recover=recover,
            recovery_point=recovery_point,
            log_start=log_start,
        )
        partition_log = cls(
            directory,
            config,
            segments,
            leader_epoch=leader_epoch,
            recovery_point=recovery_point if recover else segments[-1].next_offset,
            log_start=log_start,
        )
        partition_log._load_producer_state()
        return partition_log

    def _load_producer_state(self) -> None:
        """Latest usable snapshot at or below the log end, then the headers after it."""
        self.producers, self.txn_index = load_transaction_state(
            self.directory, self._segments, self._bases, self._next_offset
        )

    # -- offsets --------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._next_offset

    @property
    def last_stable_offset(self) -> int:
        """First offset of the oldest open transaction, else the high watermark
        (never below the log start: retention may delete a transaction's start)."""
        ongoing = self.producers.ongoing
        if ongoing:
            first = min(ongoing.values())
            return min(max(first, self._log_start), self._next_offset)
        return self._next_offset

    def aborted_transactions(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping [start, end)."""
        return [(e.producer_id, e.first_offset) for e in self.txn_index.aborted(start, end)]

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> Segment:
        """The newest segment, the one taking appends."""
        return self._active

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def offline(self) -> bool:
        return self._offline

    @property
    def layout_version(self) -> int:
        return self._layout_version

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs (AlterConfigs) to later appends and rolls."""
        self.config = config
        self._active.index_interval_bytes = config.index_interval_bytes

    # -- appending -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._offline:
            raise KafkaError(ErrorCode.kafka_storage_error, f"log {self.directory} is offline")
        if self._closed:
            raise KafkaError(ErrorCode.kafka_storage_error, f"log {self.directory} is closed")

    def _take_offline(self, reason: str) -> None:
        if not self._offline:
            self._offline = True
            log.error(
                "%s is offline until the broker restarts (appends and reads fail with "
                "KAFKA_STORAGE_ERROR): %s",
                self.directory.name,
                reason,
            )

    def _write_failed(self, exc: OSError | KafkaError) -> KafkaError:
        """The error for a failed append; the log is as before it, or offline."""
        if isinstance(exc, StorageOffline):
            self._take_offline(str(exc))
        else:
            log.error("%s: append refused, log unchanged: %s", self.directory.name, exc)
        return KafkaError(
            ErrorCode.kafka_storage_error, f"append to {self.directory.name} failed: {exc}"
        )

    def append(
        self, payload: bytes | bytearray | memoryview, now_ms: int, *, from_client: bool = True
    ) -> AppendResult:
        """Validate, assign offsets and write a producer's batches (see ``stamp``).

        ``from_client=False`` is for the broker's own writes (coordinator records):
        Kafka's producer-only checks and idempotence checks are skipped.
        """
        if self._closed or self._offline:
            self._check_open()
        first_offset = self._next_offset
        stamped = stamp(self, payload, first_offset, now_ms, from_client=from_client)
        if isinstance(stamped, AppendResult):
            return stamped  # a duplicate
        buf, _batches, metas, _pending, log_append_time = stamped
        last_offset = metas[-1][2]
        max_timestamp = max(m[3] for m in metas) if len(metas) > 1 else metas[0][3]
        config = self.config
        segment = self._active
        try:
            if segment.log.size and segment.should_roll(
                len(buf),
                max_timestamp,
                last_offset,
                config.segment_bytes,
                config.segment_ms,
                now_ms,
            ):
                segment = self._roll(now_ms)
            segment.append(buf, metas)
        except (OSError, KafkaError) as exc:
            raise self._write_failed(exc) from exc
        self._next_offset = last_offset + 1
        record_producers(self.producers, stamped)
        self.flushes.add(last_offset + 1 - first_offset, now_ms)
        return AppendResult(
            first_offset,
            last_offset,
            -1 if log_append_time is None else log_append_time,
            self._log_start,
        )

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> int:
        """Append a commit or abort marker ending the producer's transaction; its offset
        (see ``log_markers`` for the errors)."""
        self._check_open()
        return append_marker(self, producer_id, producer_epoch, coordinator_epoch, commit, now_ms)

    def append_records(
        self, records: Sequence[RecordInput], now_ms: int, *, compression: int = 0
    ) -> AppendResult:
        """Encode ``(key, value, headers, timestamp_ms)`` records as one batch and append it."""
        return self.append(
            encode_batch(records, compression=compression), now_ms, from_client=False
        )

    def _roll(self, now_ms: int) -> Segment:
        """Start a new active segment at the log end offset."""
        old = self._active
        if old.is_empty:
            return old  # an empty segment is as new as a new one
        old.seal()
        base = self._next_offset
        segment = new_segment(self.directory, self.config, base, now_ms)
        self._segments.append(segment)
        self._bases.append(base)
        self._active = segment
        self.flushes.dir_changes += 1
        snapshot_at_roll(self.producers, self.directory, base, self.log_start_offset)
        return segment

    # -- reading ------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        With ``min_one`` (KIP-74) the first batch is returned even when larger than
        ``max_bytes``. Batches reaching ``max_offset`` (exclusive) are left out. Empty
        at the log end; OFFSET_OUT_OF_RANGE outside [log start, log end].
        """
        end_offset = self._read_end(offset, max_offset)
        if offset >= end_offset:
            return b""
        return read_batches(self._segments, self._bases, offset, end_offset, max_bytes, min_one)

    def read_region(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> FileRegion | bytes:
        """What ``read`` reads, as a region of its segment file (b"" when nothing)."""
        end_offset = self._read_end(offset, max_offset)
        if offset >= end_offset:
            return b""
        region = region_of_batches(
            self._segments, self._bases, offset, end_offset, max_bytes, min_one
        )
        return b"" if region is None else region

    def _read_end(self, offset: int, max_offset: int | None) -> int:
        """Where a read from ``offset`` stops; OFFSET_OUT_OF_RANGE outside the log."""
        self._check_open()
        end_offset = self._next_offset
        if offset < self._log_start or offset > end_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is outside [{self.log_start_offset}, {end_offset}] "
                f"of {self.directory.name}",
            )
        if max_offset is not None and max_offset < end_offset:
            end_offset = max_offset
        return end_offset

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record whose timestamp is >= ``timestamp`` (ListOffsets)."""
        self._check_open()
        return offset_for_timestamp(self._segments, timestamp, self._log_start)

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """The record with the largest timestamp, the first such (ListOffsets -3)."""
        self._check_open()
        return max_timestamp_offset(self._segments)

    def record_timestamp(self, offset: int) -> int | None:
        """The estimated timestamp of the record at ``offset`` (lag in seconds)."""
        return record_timestamp(self._segments, offset)

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """The largest epoch up to ``epoch`` and where it ends (OffsetForLeaderEpoch)."""
        return self._known_epochs().end_offset_for(epoch, self.log_start_offset, self._next_offset)

    def log_start_epoch(self) -> int:
        return self._known_epochs().epoch_at_start(self.log_start_offset)

    def _known_epochs(self) -> LeaderEpochs:
        self._check_open()
        if self._epochs is None:
            # Appends after this are at leader_epoch, the latest known: nothing to add.
            self._epochs = epochs_of(self._segments, self.leader_epoch, self._next_offset)
        return self._epochs

    # -- retention and truncation ---------------------------------------------------------------

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest segments past ``retention.ms`` or beyond ``retention.bytes``
        (see ``log_retention``); returns how many. The active segment is never deleted."""
        self._check_open()
        segments = self._segments
        count = expired_segment_count(segments, self.config, now_ms, self._log_start)
        if count == 0:
            return 0
        if count == len(segments):
            self._roll(now_ms)
        self._layout_version += 1
        # Files unlinked off the loop: see ``take_retired_files``.
        bases, flushes, retired = self._bases, self.flushes, self._retired_files
        delete_oldest(self.directory, segments, bases, count, self.txn_index, flushes, retired)
        self._log_start = max(self._log_start, segments[0].base_offset)
        return count

    def advance_log_start(self, offset: int) -> bool:
        """Move the log start up to ``offset`` (DeleteRecords): records before it
        are no longer read; whole segments before it go at the next retention
        pass. Whether it moved; OFFSET_OUT_OF_RANGE past the high watermark."""
        self._check_open()
        if offset > self._next_offset:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"Cannot increment the log start offset to {offset} of {self.directory.name} "
                f"since it is larger than the high watermark {self._next_offset}",
            )
        if offset <= self._log_start:
            return False
        self._log_start = offset
        self.txn_index.forget_below(offset)
        log.info("%s: log start offset is now %d", self.directory.name, offset)
        return True

    def take_retired_files(self) -> list[Path]:
        """Files of segments retention removed, for the caller to unlink (off the loop)."""
        files, self._retired_files = self._retired_files, []
        return files

    def truncate_to(self, offset: int, now_ms: int = 0) -> None:
        """Drop everything from ``offset`` on (the batch holding it goes whole).

        Below the log start the log is emptied and restarts at ``offset``.
        """
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._next_offset:
            return
        truncate_segments(self.directory, self.config, self._segments, self._bases, offset, now_ms)
        self._active = self._segments[-1]
        self._next_offset = end = self._active.next_offset
        self._log_start = max(self._segments[0].base_offset, min(self._log_start, end))
        flushes = self.flushes
        # Lowered only once the log end is: a flush finishing meanwhile takes the lower.
        flushes.recovery_point = min(flushes.recovery_point, end)
        flushes.dir_changes += 1
        self._layout_version += 1
        lower_clean_offset(self.directory, end)
        self.txn_index.rewrite(self._bases, self.log_start_offset, end)
        self._load_producer_state()
        self._epochs = None
        log.info("%s: truncated to offset %d", self.directory.name, end)

    def replace_segments(
        self, old: Sequence[Segment], new: Segment, *, on_step: Callable[[str], None] | None = None
    ) -> list[Path]:
        """Put ``new`` (a cleaner's output) in place of the consecutive closed segments
        ``old``, crash-safely (see ``log_retention.swap_in``). Returns the old files,
        for the caller to remove off the loop. ``on_step`` is called after each step.
        """
        self._check_open()
        doomed = swap_in(self.directory, self._segments, self._bases, old, new, on_step)
        # The old segments' aborted transactions now belong to ``new``.
        self.txn_index.rewrite(self._bases, self.log_start_offset, self._next_offset)
        self._layout_version += 1
        self.flushes.dir_changes += 1
        return doomed

    # -- shutting down ----------------------------------------------------------------------------

    def close(self) -> None:
        """Seal, snapshot, fsync and close every file. Idempotent.

        An offline log is only closed, and raises: its shutdown is not clean.
        """
        if self._closed:
            return
        if self._offline:
            self.abandon()
            raise KafkaError(ErrorCode.kafka_storage_error, f"{self.directory.name} is offline")
        try:
            self._active.seal()
            if snapshot_at_close(self.producers, self.directory, self._next_offset):
                self.flushes.dir_changes += 1
            self._sync(all_files=True)
        finally:
            self.abandon()

    def delete(self) -> None:
        """Close without flushing and remove the partition directory."""
        self.abandon()
        remove_log_directory(self.directory)

    def abandon(self) -> None:
        """Close without flushing or snapshotting (the files are to be removed,
        or cannot be trusted)."""
        self._closed = True
        for segment in self._segments:
            segment.close()

    def __repr__(self) -> str:
        span = f"{self.log_start_offset}..{self._next_offset}"
        return f"SegmentLog({self.directory.name}, {span}, {len(self._segments)} segment(s))"
