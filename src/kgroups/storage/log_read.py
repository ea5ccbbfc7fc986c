"""Reading a partition log: whole batches for Fetch, and the record lookups of
ListOffsets.

A cleaned log has offset gaps: a read at a missing offset starts at the next
batch after it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from kgroups.errors import KafkaError
from kgroups.partitions.leader_epochs import NO_EPOCH
from kgroups.partitions.log import TimestampOffset
from kgroups.records.batch import BatchHeader, decode_records
from kgroups.records.file_region import FileRegion
from kgroups.records.timestamps import estimate
from kgroups.storage.segment import Segment

__all__ = [
    "TimestampOffset",
    "locate_batches",
    "max_timestamp_offset",
    "offset_for_timestamp",
    "read_batches",
    "record_timestamp",
    "region_of_batches",
]


def read_batches(
    segments: Sequence[Segment],
    bases: Sequence[int],
    offset: int,
    end_offset: int,
    max_bytes: int,
    min_one: bool,
) -> bytes:
    """Whole batches from the one holding ``offset`` (at least the log start),
    stopping before the batch that holds ``end_offset`` and, unless only the
    first batch fits (with ``min_one``), within ``max_bytes``."""
    found = locate_batches(segments, bases, offset, end_offset, max_bytes, min_one)
    if found is None:
        return b""
    segment, start, end = found
    return segment.read(start, end)


def region_of_batches(
    segments: Sequence[Segment],
    bases: Sequence[int],
    offset: int,
    end_offset: int,
    max_bytes: int,
    min_one: bool,
) -> FileRegion | None:
    """The batches ``read_batches`` would read, as a region of their segment
    file, for the connection to send without reading them."""
    found = locate_batches(segments, bases, offset, end_offset, max_bytes, min_one)
    if found is None:
        return None
    segment, start, end = found
    return FileRegion(segment.log, start, end - start, segment.offset_at(end))


def locate_batches(
    segments: Sequence[Segment],
    bases: Sequence[int],
    offset: int,
    end_offset: int,
    max_bytes: int,
    min_one: bool,
) -> tuple[Segment, int, int] | None:
    """The segment and the [start, end) positions of what ``read_batches`` reads;
    None when that is nothing."""
    i = max(0, bisect_right(bases, offset) - 1)
    found = None
    while i < len(segments):
        segment = segments[i]
        found = segment.find(offset)
        if found is not None:
            break
        i += 1
    if found is None:
        return None
    start, header = found
    end = segment.size
    if end_offset < segment.next_offset:
        cut = segment.find(end_offset)
        if cut is not None:
            end = cut[0]
    if end <= start:
        return None
    if start + max_bytes < end:
        if not min_one and header.size > max_bytes:
            return None
        end = min(end, segment.end_position_within(start, start + max_bytes))
    return segment, start, end


def offset_for_timestamp(
    segments: Sequence[Segment], timestamp: int, log_start: int = 0
) -> TimestampOffset | None:
    """The first record at or after ``log_start`` whose timestamp is >=
    ``timestamp`` (ListOffsets)."""
    for segment in segments:
        if segment.is_empty or segment.max_timestamp < timestamp:
            continue
        start = segment.index.lookup(segment.time_index.lookup(timestamp))
        for pos, header in segment.scan(start):
            if header.max_timestamp < timestamp or header.last_offset < log_start:
                continue
            for record in decode_records(segment.read(pos, pos + header.size)):
                if record.timestamp >= timestamp and record.offset >= log_start:
                    return TimestampOffset(record.offset, record.timestamp, _epoch(header))
    return None


def max_timestamp_offset(segments: Sequence[Segment]) -> TimestampOffset | None:
    """The record with the largest timestamp, the first such (ListOffsets -3)."""
    best: Segment | None = None
    for segment in segments:
        if not segment.is_empty and (best is None or segment.max_timestamp > best.max_timestamp):
            best = segment
    if best is None:
        return None
    found = best.find(best.offset_of_max_timestamp)
    if found is None:
        return None
    pos, header = found
    for record in decode_records(best.read(pos, pos + header.size)):
        if record.timestamp == best.max_timestamp:
            return TimestampOffset(record.offset, record.timestamp, _epoch(header))
    return TimestampOffset(header.last_offset, header.max_timestamp, _epoch(header))


def _epoch(header: BatchHeader) -> int:
    """A batch's leader epoch, -1 for one written without (as Kafka answers it)."""
    return max(header.partition_leader_epoch, NO_EPOCH)


def record_timestamp(segments: Sequence[Segment], offset: int) -> int | None:
    """The estimated timestamp of the first record at or after ``offset``, from
    its batch's header; None past the end or for a record without one."""
    try:
        i = max(0, bisect_right([s.base_offset for s in segments], offset) - 1)
        for segment in segments[i:]:
            found = segment.find(offset)
            if found is not None:
                return estimate(found[1], offset)
    except (KafkaError, OSError, ValueError):
        return None
    return None
