"""Sparse offset index of one segment, in Kafka's ``.index`` file format.

Each entry is 8 bytes, big-endian: the offset relative to the segment's base
offset (int32) and the byte position of a batch in the ``.log`` file (int32). As
in Kafka, an entry is added once more than ``index.interval.bytes`` have been
appended since the previous one, and it records the *last* offset of the batch at
that position: every offset greater than the entry's lives at or after it.

The entries live in memory (see :mod:`kgroups.storage.sparse_index`); a file
that is inconsistent (partial entry, entries out of order, a position beyond the
log) makes the caller rebuild the index from the log instead.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from pathlib import Path

from kgroups.storage.append_file import AppendFile
from kgroups.storage.sparse_index import IndexCorruptError, SparseIndex

__all__ = ["IndexCorruptError", "OffsetIndex"]


def _int_array(raw: bytes, typecode: str) -> array[int]:
    values = array(typecode)
    values.frombytes(raw)
    if sys.byteorder == "little":
        values.byteswap()
    return values


class OffsetIndex(SparseIndex):
    __slots__ = ("_offsets", "_positions")

    entry = struct.Struct(">ii")
    typecodes = ("i", "i")

    def __init__(self, file: AppendFile, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(file, base_offset, max_index_bytes)
        self._offsets, self._positions = self._columns

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_bytes: int, log_size: int) -> OffsetIndex:
        """Read an existing index, raising IndexCorruptError if it is unusable."""
        index = cls._load(path, base_offset, max_index_bytes)
        if index._positions and index._positions[-1] >= log_size:
            index.close()
            raise IndexCorruptError(f"{path}: position {index._positions[-1]} beyond the log")
        return index

    def _read_entries(self, raw: bytes) -> None:
        pairs = _int_array(raw, "i")
        offsets = pairs[0::2]
        positions = pairs[1::2]
        previous_offset = previous_position = -1
        for relative, position in zip(offsets, positions, strict=True):
            if relative <= previous_offset or position <= previous_position:
                raise IndexCorruptError(f"{self.path}: entries out of order")
            previous_offset, previous_position = relative, position
        self._offsets.extend(offsets)
        self._positions.extend(positions)

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
        self._append(relative, position)

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
        if keep < len(self._positions):
            self._keep(keep)
