"""Timestamps of records by (topic, partition, offset), cached from one scrape
to the next: the age of the first record a group has not consumed yet is what
lag in seconds is, and only the offsets that moved since the last scrape cost
a read (see kgroups.records.timestamps for how a timestamp is estimated).
"""

from __future__ import annotations

from kgroups.partitions.log import PartitionLog

Key = tuple[str, int, int]


class RecordTimes:
    """Timestamps by (topic, partition, offset), kept from one scrape to the next."""

    def __init__(self) -> None:
        self._previous: dict[Key, int | None] = {}
        self._current: dict[Key, int | None] = {}

    def cached(self, key: Key) -> tuple[bool, int | None]:
        if key in self._current:
            return True, self._current[key]
        if key in self._previous:
            found = self._current[key] = self._previous[key]
            return True, found
        return False, None

    def put(self, key: Key, timestamp: int | None) -> None:
        self._current[key] = timestamp

    def lookup(self, plog: PartitionLog, topic: str, partition: int, offset: int) -> int | None:
        key = (topic, partition, offset)
        hit, found = self.cached(key)
        if not hit:
            found = plog.record_timestamp(offset)
            self.put(key, found)
        return found

    def scrape_done(self) -> None:
        """Forget what this scrape did not look up."""
        self._previous, self._current = self._current, {}
