"""The aborted transaction index: per segment, a ``<base>.txnindex`` file.

Kafka's format: one 34-byte entry per aborted transaction whose abort marker is
in the segment, in marker order: version int16 (0), producer id int64, first
offset int64, last offset (the marker's) int64, last stable offset int64 (the
LSO just after the abort). A read_committed fetch returns the aborted
transactions its range overlaps, so the consumer can drop their records.

An entry is written when an abort marker is appended; the files go with their
segments; opening the log rebuilds the entries of markers after the producer
snapshot it replays from (a crash may have cut a write short). The files are
fsynced before every snapshot, so the entries of markers below it are on disk.
"""

from __future__ import annotations

import contextlib
import os
import struct
from bisect import bisect_left
from pathlib import Path
from typing import NamedTuple

__all__ = ["AbortedTxn", "TxnIndex", "sync_txn_indexes", "txn_index_path"]

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
SUFFIX = ".txnindex"


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{SUFFIX}"


def encode_entry(entry: AbortedTxn) -> bytes:
    return _ENTRY.pack(0, *entry)


def read_entries(path: Path) -> list[AbortedTxn]:
    """The whole entries of a file (a torn last one is left out)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version != 0:
            break
        entries.append(AbortedTxn(*fields))
    return entries


def sync_txn_indexes(directory: Path) -> None:
    """fsync every ``.txnindex`` of ``directory``: before a producer snapshot,
    which lets recovery skip the markers below it."""
    for path in directory.glob("*" + SUFFIX):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class TxnIndex:
    """The aborted transactions of one log, in memory (sorted by marker offset)
    and in each segment's ``.txnindex``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []

    @classmethod
    def load(cls, directory: Path, bases: list[int], end: int) -> TxnIndex:
        """The entries of every ``.txnindex`` in ``directory`` whose markers lie in
        [first base, ``end``). Files that do not hold exactly those entries, each
        in the segment holding its marker (a crash during a compaction swap,
        retention or truncation), are written anew."""
        index = cls(directory)
        found: dict[int, list[AbortedTxn]] = {}
        torn = False
        for path in directory.glob("*" + SUFFIX):
            stem = path.name[: -len(SUFFIX)]
            if stem.isdigit():
                found[int(stem)] = entries = read_entries(path)
                torn = torn or path.stat().st_size != len(entries) * ENTRY_SIZE
        start = bases[0]
        kept = sorted(
            {e for entries in found.values() for e in entries if start <= e.last_offset < end},
            key=lambda e: e.last_offset,
        )
        for entry in kept:
            if not index.entries or entry.last_offset > index.entries[-1].last_offset:
                index._put(entry)
        if torn or found != index._by_base(bases):
            index.rewrite(bases, start, end)
        return index

    def _by_base(self, bases: list[int]) -> dict[int, list[AbortedTxn]]:
        """The entries grouped by the segment holding each marker."""
        by_base: dict[int, list[AbortedTxn]] = {}
        for entry in self.entries:
            i = max(0, bisect_left(bases, entry.last_offset + 1) - 1)
            by_base.setdefault(bases[i], []).append(entry)
        return by_base

    def _put(self, entry: AbortedTxn) -> None:
        self.entries.append(entry)
        self._last_offsets.append(entry.last_offset)

    def add(self, entry: AbortedTxn, segment_base: int) -> None:
        """Record an abort whose marker was just appended to ``segment_base``."""
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            return  # known already (rebuilt at open)
        self._put(entry)
        fd = os.open(
            txn_index_path(self.directory, segment_base),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND,
            0o644,
        )
        try:
            os.write(fd, encode_entry(entry))
        finally:
            os.close(fd)

    def aborted(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping offsets [start, end)."""
        i = bisect_left(self._last_offsets, start)
        return [e for e in self.entries[i:] if e.first_offset < end]

    def forget_below(self, offset: int) -> None:
        """Drop the entries of deleted segments (their files go with them)."""
        i = bisect_left(self._last_offsets, offset)
        if i:
            del self.entries[:i]
            del self._last_offsets[:i]

    def rewrite(self, bases: list[int], start: int, end: int) -> None:
        """Keep the entries with markers in [start, end) (segments deleted or cut
        off); each segment's file is written anew from them."""
        kept = [e for e in self.entries if start <= e.last_offset < end]
        self.entries = kept
        self._last_offsets = [e.last_offset for e in kept]
        by_base = self._by_base(bases)
        for path in self.directory.glob("*" + SUFFIX):
            stem = path.name[: -len(SUFFIX)]
            if stem.isdigit() and int(stem) not in by_base:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        for base, entries in by_base.items():
            data = b"".join(encode_entry(e) for e in entries)
            txn_index_path(self.directory, base).write_bytes(data)
