"""The timestamp of the record at an offset: the age of the first record a
group has not consumed yet is what lag in seconds is.

Read from the header of the batch holding the offset, never the records: the
batch's first timestamp is exact for its first record, a LogAppendTime batch
holds one time for all, and a record inside a CreateTime batch gets a time
interpolated by offset between the batch's first and largest timestamps (off
by at most the batch's time span, which is about the producer's linger). So a
lookup costs an index lookup and a header read, compressed batches included.
Lookups are cached by (topic, partition, offset) from one scrape to the next:
only the offsets that moved since cost a read.
"""

from __future__ import annotations

from bisect import bisect_right

from kgroups.errors import KafkaError
from kgroups.records.batch import HEADER_SIZE, BatchHeader, read_header
from kgroups.storage.log import SegmentLog

Key = tuple[str, int, int]


def record_timestamp(plog: SegmentLog, offset: int) -> int | None:
    """The timestamp of the first record at or after ``offset`` of a local log;
    None past the end or for a record without one."""
    try:
        segments = plog.segments
        i = max(0, bisect_right([s.base_offset for s in segments], offset) - 1)
        for segment in segments[i:]:
            found = segment.find(offset)
            if found is not None:
                return estimate(found[1], offset)
    except (KafkaError, OSError, ValueError):
        return None
    return None


def timestamp_in(batches: bytes, offset: int) -> int | None:
    """The same for the first batch of ``batches`` (a Fetch answer's records)."""
    if len(batches) < HEADER_SIZE:
        return None
    return estimate(read_header(batches), offset)


def estimate(header: BatchHeader, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` in the batch of ``header``."""
    if header.magic != 2:
        return None
    if header.timestamp_type == 1:  # LogAppendTime
        found = header.max_timestamp
    elif offset <= header.base_offset or header.last_offset_delta <= 0:
        found = header.base_timestamp
    else:
        share = min(offset - header.base_offset, header.last_offset_delta)
        span = header.max_timestamp - header.base_timestamp
        found = header.base_timestamp + span * share // header.last_offset_delta
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

    def lookup(self, plog: SegmentLog, topic: str, partition: int, offset: int) -> int | None:
        key = (topic, partition, offset)
        hit, found = self.cached(key)
        if not hit:
            found = record_timestamp(plog, offset)
            self.put(key, found)
        return found

    def scrape_done(self) -> None:
        """Forget what this scrape did not look up."""
        self._previous, self._current = self._current, {}
