"""Transactions met while loading a `__consumer_offsets` partition.

The loader keeps only the newest record of each key; a record in a
transactional batch is not one of those until its producer's commit marker,
and then only if no plain record of the key came after it in the log (Kafka
compares their offsets; here, their order in the scan). An abort marker drops
the producer's records, a plain tombstone drops the key's pending records, and
a committed record supersedes other transactions' older records of the key. What
has no marker at the end is an open transaction, replayed as pending.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class OpenRecord(NamedTuple):
    producer_id: int
    key: bytes
    value: bytes
    superseded: bool  # a plain record of the key came after it


class LoadedTransactions:
    def __init__(self, latest: dict[bytes, bytes | None]) -> None:
        self._latest = latest
        # producer id -> key -> [value, superseded, order of arrival]
        self._open: dict[int, dict[bytes, list[object]]] = {}
        self._seq = 0
        # key -> producers with a record of it pending; the scan checks a
        # plain record's key against it only while it is not empty.
        self.keys: dict[bytes, set[int]] = {}

    def record(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        """A record of a transactional batch."""
        if value is None:
            return  # transactional commits write no tombstones
        self._open.setdefault(producer_id, {})[key] = [value, False, self._seq]
        self._seq += 1
        self.keys.setdefault(key, set()).add(producer_id)

    def plain(self, key: bytes, value: bytes | None) -> None:
        """A plain record of a key with pending records."""
        producers = self.keys.get(key, ())
        for producer_id in producers:
            if value is None:
                del self._open[producer_id][key]
            else:
                self._open[producer_id][key][1] = True
        if value is None:
            self.keys.pop(key, None)

    def marker(self, producer_id: int, commit: bool) -> None:
        for key, (value, superseded, seq) in self._open.pop(producer_id, {}).items():
            producers = self.keys[key]
            producers.discard(producer_id)
            if not producers:
                del self.keys[key]
            if commit and not superseded:
                assert isinstance(value, bytes)
                self._latest.pop(key, None)
                self._latest[key] = value
                # Other transactions' older records of the key lose to it.
                for other in producers:
                    entry = self._open[other][key]
                    if entry[2] < seq:  # type: ignore[operator]
                        entry[1] = True

    def still_open(self) -> list[OpenRecord]:
        return [
            OpenRecord(producer_id, key, value, bool(superseded))
            for producer_id, records in self._open.items()
            for key, (value, superseded, _seq) in records.items()
            if isinstance(value, bytes)
        ]


def replay_loaded(
    replay: Callable[[bytes, bytes | None, int], None],
    latest: dict[bytes, bytes | None],
    still_open: list[OpenRecord],
) -> None:
    """Replay what a load kept: the newest records, and the open transactions'
    records as pending. A pending record that a later plain record superseded
    goes first, so that replaying that plain record marks it."""
    for record in still_open:
        if record.superseded:
            replay(record.key, record.value, record.producer_id)
    for key, value in latest.items():
        replay(key, value, -1)
    for record in still_open:
        if not record.superseded:
            replay(record.key, record.value, record.producer_id)
