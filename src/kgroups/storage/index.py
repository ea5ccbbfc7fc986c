"""Sparse offset index of one segment, in Kafka's ``.index`` file format.

Each entry is 8 bytes, big-endian: the offset relative to the segment's base
offset (int32) and the byte position of a batch in the ``.log`` file (int32). As
in Kafka, an entry is added once more than ``index.interval.bytes`` have been
appended since the previous one, and it records the *last* offset of the batch at
that position: every offset greater than the entry's lives at or after it.

The entries live in memory (two int arrays searched by bisection); the file is
only appended to, and read back at open. Anything inconsistent there (partial
entry, entries out of order, a position beyond the log) makes the caller rebuild
the index from the log instead.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from pathlib import Path

from kgroups.storage.append_file import AppendFile

__all__ = ["IndexCorruptError", "OffsetIndex"]

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")


class IndexCorruptError(Exception):
    """An index file that cannot be trusted; rebuild it from the log."""


def _int_array(raw: bytes, typecode: str) -> array[int]:
    values = array(typecode)
    values.frombytes(raw)
    if sys.byteorder == "little":
        values.byteswap()
    return values


class OffsetIndex:
    __slots__ = ("_file", "_offsets", "_positions", "base_offset", "max_entries")

    def __init__(self, file: AppendFile, base_offset: int, max_index_bytes: int) -> None:
        self._file = file
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // ENTRY_SIZE)
        self._offsets: array[int] = array("i")
        self._positions: array[int] = array("i")

    @classmethod
    def create(cls, path: Path, base_offset: int, max_index_bytes: int) -> OffsetIndex:
        """A new, empty index (an existing file is emptied)."""
        file = AppendFile.open(path)
        if file.size:
            file.truncate(0)
        return cls(file, base_offset, max_index_bytes)

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_bytes: int, log_size: int) -> OffsetIndex:
        """Read an existing index, raising IndexCorruptError if it is unusable."""
        file = AppendFile.open(path, create=False)
        index = cls(file, base_offset, max_index_bytes)
        try:
            raw = file.pread(file.size, 0)
            if len(raw) % ENTRY_SIZE:
                raise IndexCorruptError(f"{path}: size {len(raw)} is not a multiple of 8")
            pairs = _int_array(raw, "i")
            offsets = pairs[0::2]
            positions = pairs[1::2]
            previous_offset = previous_position = -1
            for relative, position in zip(offsets, positions, strict=True):
                if relative <= previous_offset or position <= previous_position:
                    raise IndexCorruptError(f"{path}: entries out of order")
                previous_offset, previous_position = relative, position
            if previous_position >= log_size:
                raise IndexCorruptError(f"{path}: position {previous_position} beyond the log")
        except BaseException:
            file.close()
            raise
        index._offsets = offsets
        index._positions = positions
        return index

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def file(self) -> AppendFile:
        return self._file

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def last_offset(self) -> int:
        """Absolute offset of the last entry, or the base offset when empty."""
        if not self._offsets:
            return self.base_offset
        return self.base_offset + self._offsets[-1]

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._offsets and (relative <= self._offsets[-1] or position <= self._positions[-1]):
            return  # only ever forward, so the arrays stay sorted
        self._file.append(_ENTRY.pack(relative, position))
        self._offsets.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for the batch holding ``offset``."""
        i = bisect_right(self._offsets, offset - self.base_offset)
        return self._positions[i - 1] if i else 0

    def entry_at_or_before_position(self, position: int) -> int:
        """The greatest indexed position <= ``position`` (0 if none)."""
        i = bisect_right(self._positions, position)
        return self._positions[i - 1] if i else 0

    def truncate_to_position(self, position: int) -> None:
        """Drop entries for batches at or after ``position`` (the log is cut there)."""
        keep = bisect_right(self._positions, position - 1)
        if keep == len(self._positions):
            return
        del self._offsets[keep:]
        del self._positions[keep:]
        self._file.truncate(keep * ENTRY_SIZE)

    def reset(self) -> None:
        del self._offsets[:]
        del self._positions[:]
        self._file.truncate(0)

    def rename(self, path: Path) -> None:
        self._file.rename(path)

    def close(self) -> None:
        self._file.close()
