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
from bisect import bisect_left
from pathlib import Path

from kgroups.storage.append_file import AppendFile
from kgroups.storage.sparse_index import IndexCorruptError, SparseIndex

__all__ = ["TimeIndex"]

NO_TIMESTAMP = -1


class TimeIndex(SparseIndex):
    __slots__ = ("_offsets", "_timestamps")

    entry = struct.Struct(">qi")
    typecodes = ("q", "i")

    def __init__(self, file: AppendFile, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(file, base_offset, max_index_bytes)
        self._timestamps, self._offsets = self._columns

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_bytes: int) -> TimeIndex:
        """Read an existing index; IndexCorruptError if it is unusable.

        The caller checks the last entry against the log's end, which it learns later.
        """
        return cls._load(path, base_offset, max_index_bytes)

    def _read_entries(self, raw: bytes) -> None:
        previous_ts = NO_TIMESTAMP
        previous_offset = -1
        for timestamp, relative in self.entry.iter_unpack(raw):
            if timestamp < previous_ts or relative < previous_offset or relative < 0:
                raise IndexCorruptError(f"{self.path}: entries out of order")
            self._timestamps.append(timestamp)
            self._offsets.append(relative)
            previous_ts, previous_offset = timestamp, relative

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
        self._append(timestamp, relative)

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
        if keep < len(self._offsets):
            self._keep(keep)
