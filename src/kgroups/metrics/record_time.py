"""The timestamp of the record at an offset of a local partition log.

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
    """The timestamp of the first record at or after ``offset``; None past the
    end or for a record without one."""
    found = _timestamp(plog, offset)
    return found if found is not None and found >= 0 else None


def _timestamp(plog: PartitionLog, offset: int) -> int | None:
    try:
        chunk = plog.read(offset, 1)
    except (KafkaError, OSError):
        return None
    if len(chunk) < HEADER_SIZE:
        return None
    header = read_header(chunk)
    if header.timestamp_type == 1:  # LogAppendTime
        return header.max_timestamp
    if offset <= header.base_offset:
        return header.base_timestamp
    try:
        records = decode_records(chunk[: header.size])
    except (KafkaError, ValueError):
        return header.base_timestamp
    for record in records:
        if record.offset >= offset:
            return record.timestamp
    return header.max_timestamp


class RecordTimes:
    def __init__(self) -> None:
        self._previous: dict[Key, int | None] = {}
        self._current: dict[Key, int | None] = {}

    def lookup(self, plog: PartitionLog, topic: str, partition: int, offset: int) -> int | None:
        key = (topic, partition, offset)
        if key in self._current:
            return self._current[key]
        previous = self._previous
        found = previous[key] if key in previous else record_timestamp(plog, offset)
        self._current[key] = found
        return found

    def scrape_done(self) -> None:
        """Forget what this scrape did not look up."""
        self._previous, self._current = self._current, {}
