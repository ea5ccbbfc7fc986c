"""The timestamp of the record at an offset: the age of the first record a
group has not consumed yet is what lag in seconds is.

Read from the batch holding the offset: its first record's timestamp is in the
batch header, others need the batch decoded; a LogAppendTime batch holds one
time for all. Lookups are cached by (topic, partition, offset) from one scrape
to the next, so a group that has not moved costs nothing: only the offsets
looked up during a scrape stay cached.
"""

from __future__ import annotations

from kgroups.errors import KafkaError
from kgroups.storage.log import PartitionLog
from kgroups.storage.records import HEADER_SIZE, decode_records, read_header

Key = tuple[str, int, int]


def record_timestamp(plog: PartitionLog, offset: int) -> int | None:
    """The timestamp of the first record at or after ``offset`` of a local log;
    None past the end or for a record without one."""
    try:
        chunk = plog.read(offset, 1)
    except (KafkaError, OSError):
        return None
    return timestamp_in(chunk, offset)


def timestamp_in(batches: bytes, offset: int) -> int | None:
    """The timestamp of the first record at or after ``offset`` in the first
    batch of ``batches`` (as read from a log or a Fetch answer)."""
    if len(batches) < HEADER_SIZE:
        return None
    header = read_header(batches)
    if header.magic != 2 or header.size > len(batches):
        return None
    if header.timestamp_type == 1:  # LogAppendTime
        found = header.max_timestamp
    elif offset <= header.base_offset:
        found = header.base_timestamp
    else:
        try:
            records = decode_records(batches[: header.size])
        except (KafkaError, ValueError):
            records = []
        found = next((r.timestamp for r in records if r.offset >= offset), header.max_timestamp)
    return found if found >= 0 else None


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
            found = record_timestamp(plog, offset)
            self.put(key, found)
        return found

    def scrape_done(self) -> None:
        """Forget what this scrape did not look up."""
        self._previous, self._current = self._current, {}
