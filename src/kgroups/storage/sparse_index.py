"""The file handling a segment's offset index and time index share.

Both are append-only files of fixed-size entries, mirrored in memory by two
sorted int arrays (one per entry field) that lookups bisect. The file is only
appended to, cut back to a whole number of entries, and read back at open;
anything there that cannot be trusted raises :class:`IndexCorruptError`, and
the caller rebuilds the index from the log. Each subclass keeps its entry format
(:attr:`entry`, :meth:`_read_entries`, the arrays named in :attr:`_columns`)
and its lookups.
"""

from __future__ import annotations

import struct
from array import array
from pathlib import Path
from typing import ClassVar, Self

from kgroups.storage.append_file import AppendFile

__all__ = ["IndexCorruptError", "SparseIndex"]


class IndexCorruptError(Exception):
    """An index file that cannot be trusted; rebuild it from the log."""


class SparseIndex:
    __slots__ = ("_columns", "_file", "base_offset", "max_entries")

    entry: ClassVar[struct.Struct]
    # The typecodes of the two arrays, one per entry field.
    typecodes: ClassVar[tuple[str, str]]

    def __init__(self, file: AppendFile, base_offset: int, max_index_bytes: int) -> None:
        self._file = file
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        first, second = self.typecodes
        self._columns: tuple[array[int], array[int]] = (array(first), array(second))

    @classmethod
    def create(cls, path: Path, base_offset: int, max_index_bytes: int) -> Self:
        """A new, empty index (an existing file is emptied)."""
        file = AppendFile.open(path)
        if file.size:
            file.truncate(0)
        return cls(file, base_offset, max_index_bytes)

    @classmethod
    def _load(cls, path: Path, base_offset: int, max_index_bytes: int) -> Self:
        """Read an existing index, raising IndexCorruptError if it is unusable."""
        file = AppendFile.open(path, create=False)
        index = cls(file, base_offset, max_index_bytes)
        try:
            raw = file.pread(file.size, 0)
            if len(raw) % cls.entry.size:
                raise IndexCorruptError(
                    f"{path}: size {len(raw)} is not a multiple of {cls.entry.size}"
                )
            index._read_entries(raw)
        except BaseException:
            file.close()
            raise
        return index

    def _read_entries(self, raw: bytes) -> None:
        """Fill the (empty) arrays from the file's bytes, checking they are in order."""
        raise NotImplementedError

    @property
    def path(self) -> Path:
        return self._file.path

    @property
    def file(self) -> AppendFile:
        return self._file

    def __len__(self) -> int:
        return len(self._columns[0])

    @property
    def is_full(self) -> bool:
        return len(self._columns[0]) >= self.max_entries

    def _append(self, first: int, second: int) -> None:
        self._file.append(self.entry.pack(first, second))
        a, b = self._columns
        a.append(first)
        b.append(second)

    def _keep(self, count: int) -> None:
        """Keep only the first ``count`` entries, in memory and in the file."""
        for column in self._columns:
            del column[count:]
        self._file.truncate(count * self.entry.size)

    def reset(self) -> None:
        self._keep(0)

    def rename(self, path: Path) -> None:
        self._file.rename(path)

    def close(self) -> None:
        self._file.close()
