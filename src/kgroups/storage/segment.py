"""One log segment: ``<base offset>.log`` with its ``.index`` and ``.timeindex``.

The ``.log`` file is a plain concatenation of record batches, exactly as they go
out in fetch responses. The segment keeps in memory what the log needs per append
(size, next offset, largest timestamp) so that appending is one ``os.write`` plus,
every ``index.interval.bytes``, one small index write.

Files of a segment can carry a suffix after their extension while a cleaner or
retention is replacing them (``.cleaned``, ``.swap``, ``.deleted``); see
``log_files`` for what opening a log does with each.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from kgroups.durable import fsync_directory
from kgroups.records.batch import HEADER_SIZE, BatchHeader, BatchMeta, read_header
from kgroups.storage.append_file import AppendFile, StorageOffline
from kgroups.storage.index import IndexCorruptError, OffsetIndex
from kgroups.storage.log_files import index_path, log_path, time_index_path
from kgroups.storage.segment_recovery import INT32_MAX, RECOVERY_CHUNK, recover_segment
from kgroups.storage.time_index import NO_TIMESTAMP, TimeIndex

__all__ = ["INT32_MAX", "Segment"]

log = logging.getLogger(__name__)

_SCAN_CHUNK = 16 * 1024


class Segment:
    __slots__ = (
        "_bytes_since_index",
        "_rolling_timestamp",
        "base_offset",
        "created_ms",
        "directory",
        "index",
        "index_interval_bytes",
        "log",
        "max_timestamp",
        "next_offset",
        "offset_of_max_timestamp",
        "suffix",
        "time_index",
    )

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        log_file: AppendFile,
        index: OffsetIndex,
        time_index: TimeIndex,
        *,
        index_interval_bytes: int,
        now_ms: int,
        suffix: str = "",
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log = log_file
        self.index = index
        self.time_index = time_index
        self.index_interval_bytes = index_interval_bytes
        self.suffix = suffix
        self.created_ms = now_ms
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self._bytes_since_index = 0
        # Max timestamp of the segment's first batch; segment.ms counts from it.
        self._rolling_timestamp: int | None = None

    # -- creation and loading -------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        now_ms: int,
        suffix: str = "",
    ) -> Segment:
        """A new empty segment (any files already at its names are emptied).

        If any of its files cannot be made, none is left behind.
        """
        paths = (
            log_path(directory, base_offset, suffix),
            index_path(directory, base_offset, suffix),
            time_index_path(directory, base_offset, suffix),
        )
        opened: list[AppendFile] = []
        try:
            log_file = AppendFile.open(paths[0])
            opened.append(log_file)
            if log_file.size:
                log_file.truncate(0)
            index = OffsetIndex.create(paths[1], base_offset, max_index_bytes)
            opened.append(index.file)
            time_index = TimeIndex.create(paths[2], base_offset, max_index_bytes)
        except BaseException:
            for f in opened:
                f.close()
            for path in paths:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        return cls(
            directory,
            base_offset,
            log_file,
            index,
            time_index,
            index_interval_bytes=index_interval_bytes,
            now_ms=now_ms,
            suffix=suffix,
        )

    # Its parameters and its ``cls(...)`` restate create's: two ways to the same object.
    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_bytes: int,
        now_ms: int,
        recover: bool,
        suffix: str = "",
    ) -> Segment:
        """Open an existing segment.

        With ``recover`` every batch is checked (length, magic, CRC, offsets) and a
        bad tail is cut off; the indexes are rebuilt as a side effect. Otherwise the
        indexes are loaded, and rebuilt only if missing or inconsistent.
        """
        log_file = AppendFile.open(log_path(directory, base_offset, suffix), create=False)
        segment: Segment | None = None
        try:
            ipath = index_path(directory, base_offset, suffix)
            tpath = time_index_path(directory, base_offset, suffix)
            indexes = (
                None
                if recover
                else _load_indexes(ipath, tpath, base_offset, max_index_bytes, log_file.size)
            )
            if indexes is None:
                index = OffsetIndex.create(ipath, base_offset, max_index_bytes)
                time_index = TimeIndex.create(tpath, base_offset, max_index_bytes)
            else:
                index, time_index = indexes
            segment = cls(
                directory,
                base_offset,
                log_file,
                index,
                time_index,
                index_interval_bytes=index_interval_bytes,
                now_ms=now_ms,
                suffix=suffix,
            )
            if recover:
                segment.recover()
            elif indexes is None:
                segment.rebuild_indexes()
            else:
                segment._check_loaded_indexes()
            return segment
        except BaseException:
            if segment is not None:
                segment.close()
            else:
                log_file.close()
            raise

    def _check_loaded_indexes(self) -> None:
        # The indexes say nothing about batches after their last entry: scan those.
        self._scan_tail()
        time_index = self.time_index
        ts, offset = time_index.last_entry
        if len(time_index) and offset >= self.next_offset:
            log.warning("rebuilding indexes: %s points beyond the log", time_index.file.path)
            self.rebuild_indexes()
        elif ts > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = ts, offset

    def _scan_tail(self) -> None:
        """Learn next offset and recent max timestamp from the batches after the last
        index entry (the index itself says nothing about them)."""
        start = self.index.lookup(self.index.last_offset) if len(self.index) else 0
        self._bytes_since_index = 0
        for pos, header in self.scan(start):
            self._track(header.last_offset, header.max_timestamp)
            self.next_offset = header.next_offset
            self._bytes_since_index += header.size
            if self._rolling_timestamp is None and pos == 0:
                self._rolling_timestamp = header.max_timestamp

    # -- properties -------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def is_empty(self) -> bool:
        return self.log.size == 0

    @property
    def last_offset(self) -> int:
        return self.next_offset - 1

    @property
    def largest_timestamp(self) -> int:
        """What retention compares: the largest record timestamp, or, for a segment
        whose records carry none, the file's modification time (as Kafka does)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log.path).st_mtime_ns // 1_000_000

    @property
    def rolling_timestamp(self) -> int | None:
        """Max timestamp of the first batch (None while the segment is empty)."""
        if self._rolling_timestamp is None and self.log.size >= HEADER_SIZE:
            self._rolling_timestamp = read_header(self.log.pread(HEADER_SIZE, 0)).max_timestamp
        return self._rolling_timestamp

    def files(self) -> tuple[AppendFile, AppendFile, AppendFile]:
        return self.log, self.index.file, self.time_index.file

    # -- appending ----------------------------------------------------------------

    def _track(self, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset

    def append(self, data: bytes | bytearray | memoryview, batches: Sequence[BatchMeta]) -> int:
        """Append whole batches in one write; returns their file position.

        All or nothing: if a write fails, the files and this object are put back
        as they were before raising (StorageOffline if that fails too).
        """
        position = self.log.append(data)  # undoes itself on failure
        max_ts, max_ts_offset = self.max_timestamp, self.offset_of_max_timestamp
        since = self._bytes_since_index
        interval = self.index_interval_bytes
        try:
            for relative, size, last_offset, max_timestamp in batches:
                if max_timestamp > max_ts:
                    max_ts, max_ts_offset = max_timestamp, last_offset
                if since > interval:
                    self.index.append(last_offset, position + relative)
                    self.time_index.maybe_append(max_ts, max_ts_offset)
                    since = 0
                since += size
        except BaseException as exc:
            self._cut_back(position, exc)
            raise
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        self._bytes_since_index = since
        if self._rolling_timestamp is None and position == 0:
            self._rolling_timestamp = batches[0][3]
        self.next_offset = batches[-1][2] + 1
        return position

    def _cut_back(self, position: int, cause: BaseException) -> None:
        """Remove a failed append's bytes and index entries (all at or after ``position``)."""
        try:
            self.log.truncate(position)
            self.index.truncate_to_position(position)
            self.time_index.truncate_to_offset(self.next_offset)
        except OSError as exc:
            raise StorageOffline(
                f"{self.log.path}: a failed append ({cause}) cannot be removed: {exc}"
            ) from exc

    def should_roll(
        self,
        append_size: int,
        max_timestamp: int,
        last_offset: int,
        segment_bytes: int,
        segment_ms: int,
        now_ms: int,
    ) -> bool:
        """Kafka's roll rule: size, age (by record time), full index, offset range."""
        size = self.log.size
        if size == 0:
            return False
        if size > segment_bytes - append_size:
            return True
        rolling = self.rolling_timestamp
        waited = (
            max_timestamp - rolling
            if rolling is not None and rolling >= 0
            else now_ms - self.created_ms
        )
        if waited > segment_ms:
            return True
        return (
            self.index.is_full
            or self.time_index.is_full
            or last_offset - self.base_offset > INT32_MAX
        )

    def seal(self) -> None:
        """Record the largest timestamp in the time index (on roll and close)."""
        if self.max_timestamp != NO_TIMESTAMP and not self.time_index.file.closed:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp, force=True
            )

    # -- reading ----------------------------------------------------------------------

    def scan(
        self, start: int = 0, end: int | None = None, chunk: int = _SCAN_CHUNK
    ) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of batches from ``start`` (a batch boundary),
        reading headers in chunks; stops at a batch that does not fit before ``end``."""
        if end is None:
            end = self.log.size
        pos = start
        buf = b""
        buf_start = pos
        pread = self.log.pread
        while pos + HEADER_SIZE <= end:
            offset = pos - buf_start
            if offset + HEADER_SIZE > len(buf):
                buf = pread(min(chunk, end - pos), pos)
                buf_start = pos
                offset = 0
                if len(buf) < HEADER_SIZE:
                    return
            header = read_header(buf, offset)
            size = header.batch_length + 12
            if size < HEADER_SIZE or pos + size > end:
                return
            yield pos, header
            pos += size

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        if offset >= self.next_offset:
            return None
        for pos, header in self.scan(self.index.lookup(offset)):
            if header.last_offset >= offset:
                return pos, header
        return None

    def end_position_within(self, start: int, limit: int) -> int:
        """The last batch boundary <= ``limit`` at or after ``start``; if even the first
        batch at ``start`` ends beyond ``limit`` its end is returned instead."""
        size = self.log.size
        if limit >= size:
            return size
        scan_from = max(start, self.index.entry_at_or_before_position(limit))
        end = scan_from
        for pos, header in self.scan(scan_from):
            batch_end = pos + header.size
            if batch_end > limit:
                if end == start:
                    return batch_end
                break
            end = batch_end
        return end

    def read(self, start: int, end: int) -> bytes:
        return self.log.pread(end - start, start)

    def offset_at(self, position: int) -> int:
        """The first offset of the batch at ``position`` (a batch boundary), the
        next offset at the segment's end: above every offset of the batches before."""
        if position >= self.log.size:
            return self.next_offset
        return read_header(self.log.pread(HEADER_SIZE, position)).base_offset

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> int:
        """Check every batch, rebuild the indexes, cut off anything bad at the end.

        Returns the number of bytes truncated.
        """
        return recover_segment(self)

    def rebuild_indexes(self) -> None:
        """Rebuild both indexes from batch headers (no CRC checks: a closed segment)."""
        self.reset_indexes()
        for pos, header in self.scan(0, chunk=RECOVERY_CHUNK):
            self.append_indexes(pos, header)

    def reset_indexes(self) -> None:
        """Empty both indexes and forget what they told, before reading every batch."""
        self._reset_tracking()
        self.index.reset()
        self.time_index.reset()

    def _reset_tracking(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self._bytes_since_index = 0
        self._rolling_timestamp = None

    def append_indexes(self, position: int, header: BatchHeader) -> None:
        """Account for a batch already in the file at ``position``."""
        if position == 0:
            self._rolling_timestamp = header.max_timestamp
        last_offset = header.last_offset
        self._track(last_offset, header.max_timestamp)
        if self._bytes_since_index > self.index_interval_bytes:
            self.index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        self.next_offset = last_offset + 1

    # -- truncation, renaming, closing --------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove batches whose last offset is >= ``offset``; returns bytes removed.

        A batch holding ``offset`` goes entirely (batches are never split), so the
        segment may end before ``offset``.
        """
        found = self.find(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.log.size - position
        self.log.truncate(position)
        self.index.truncate_to_position(position)
        self.time_index.truncate_to_offset(found[1].base_offset)
        # Re-derive what the kept batches say about offsets and timestamps.
        self._reset_tracking()
        ts, ts_offset = self.time_index.last_entry
        self.max_timestamp, self.offset_of_max_timestamp = ts, ts_offset
        self._scan_tail()
        return removed

    def change_suffix(self, suffix: str) -> None:
        """Rename the segment's files to carry ``suffix`` (``""`` for live)."""
        self.log.rename(log_path(self.directory, self.base_offset, suffix))
        self.index.rename(index_path(self.directory, self.base_offset, suffix))
        self.time_index.rename(time_index_path(self.directory, self.base_offset, suffix))
        self.suffix = suffix
        fsync_directory(self.directory)

    def close(self) -> None:
        for f in self.files():
            f.close()

    def delete(self) -> None:
        self.close()
        for f in self.files():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f.path)

    def __repr__(self) -> str:
        return (
            f"Segment({self.log.path.name}, offsets {self.base_offset}..{self.next_offset - 1}, "
            f"{self.log.size} bytes)"
        )


def _load_indexes(
    index_file: Path, time_index_file: Path, base_offset: int, max_index_bytes: int, log_size: int
) -> tuple[OffsetIndex, TimeIndex] | None:
    """A segment's indexes as stored, or None if one is missing or corrupt (to rebuild)."""
    index: OffsetIndex | None = None
    try:
        index = OffsetIndex.load(index_file, base_offset, max_index_bytes, log_size)
        return index, TimeIndex.load(time_index_file, base_offset, max_index_bytes)
    except (FileNotFoundError, IndexCorruptError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("rebuilding indexes: %s", exc)
        if index is not None:
            index.close()
        return None
