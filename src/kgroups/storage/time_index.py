"""Sparse time index of one segment, in Kafka's ``.timeindex`` file format.

Each entry is 12 bytes, big-endian: a timestamp (int64) and an offset relative to
the segment's base offset (int32), meaning "the largest timestamp in the segment
up to this offset is this one". Entries are added alongside offset index entries,
only when the timestamp grows, so both columns are sorted. When a segment is
sealed (rolled or closed) a final entry records its largest timestamp, which is
what retention reads after a restart without scanning the log.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from pathlib import Path

from kgroups.storage.append_file import AppendFile
from kgroups.storage.index import IndexCorruptError

__all__ = ["TimeIndex"]

ENTRY_SIZE = 12
_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimeIndex:
    __slots__ = ("_file", "_offsets", "_timestamps", "base_offset", "max_entries")

    def __init__(self, file: AppendFile, base_offset: int, max_index_bytes: int) -> None:
        self._file = file
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // ENTRY_SIZE)
        self._timestamps: array[int] = array("q")
        self._offsets: array[int] = array("i")

    @classmethod
    def create(cls, path: Path, base_offset: int, max_index_bytes: int) -> TimeIndex:
        file = AppendFile.open(path)
        if file.size:
            file.truncate(0)
        return cls(file, base_offset, max_index_bytes)

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_bytes: int) -> TimeIndex:
        """Read an existing index; IndexCorruptError if it is unusable.

        The caller checks the last entry against the log's end, which it learns later.
        """
        file = AppendFile.open(path, create=False)
        index = cls(file, base_offset, max_index_bytes)
        try:
            raw = file.pread(file.size, 0)
            if len(raw) % ENTRY_SIZE:
                raise IndexCorruptError(f"{path}: size {len(raw)} is not a multiple of 12")
            previous_ts = NO_TIMESTAMP
            previous_offset = -1
            for pos in range(0, len(raw), ENTRY_SIZE):
                timestamp, relative = _ENTRY.unpack_from(raw, pos)
                if timestamp < previous_ts or relative < previous_offset or relative < 0:
                    raise IndexCorruptError(f"{path}: entries out of order")
                index._timestamps.append(timestamp)
                index._offsets.append(relative)
                previous_ts, previous_offset = timestamp, relative
        except BaseException:
            file.close()
            raise
        return index

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def file(self) -> AppendFile:
        return self._file

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def is_full(self) -> bool:
        return len(self._timestamps) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int]:
        """``(timestamp, absolute offset)`` of the last entry, or (-1, base offset)."""
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int, *, force: bool = False) -> None:
        """Add an entry if ``timestamp`` is new; ``force`` ignores a full index."""
        if self._timestamps and timestamp <= self._timestamps[-1]:
            return
        if not force and self.is_full:
            return
        relative = offset - self.base_offset
        if self._offsets and relative < self._offsets[-1]:
            return
        self._file.append(_ENTRY.pack(timestamp, relative))
        self._timestamps.append(timestamp)
        self._offsets.append(relative)

    def lookup(self, timestamp: int) -> int:
        """An offset from which to scan for the first record at or after ``timestamp``.

        The last entry whose timestamp is below ``timestamp`` says that no offset
        up to it reaches ``timestamp``, so the scan can start at its offset.
        """
        i = bisect_left(self._timestamps, timestamp)
        if i == 0:
            return self.base_offset
        return self.base_offset + self._offsets[i - 1]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        relative = offset - self.base_offset
        keep = len(self._offsets)
        while keep and self._offsets[keep - 1] >= relative:
            keep -= 1
        if keep == len(self._offsets):
            return
        del self._timestamps[keep:]
        del self._offsets[keep:]
        self._file.truncate(keep * ENTRY_SIZE)

    def reset(self) -> None:
        del self._timestamps[:]
        del self._offsets[:]
        self._file.truncate(0)

    def rename(self, path: Path) -> None:
        self._file.rename(path)

    def close(self) -> None:
        self._file.close()
