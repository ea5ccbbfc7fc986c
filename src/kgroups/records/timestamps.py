"""The timestamp of the record at an offset, from its batch's header alone.

The batch's first timestamp is exact for its first record, a LogAppendTime
batch holds one time for all, and a record inside a CreateTime batch gets a
time interpolated by offset between the batch's first and largest timestamps
(off by at most the batch's time span, about the producer's linger). So an
estimate costs a header read, compressed batches included.
"""

from __future__ import annotations

from kgroups.records.batch import HEADER_SIZE, BatchHeader, read_header

__all__ = ["estimate", "timestamp_in"]


def timestamp_in(batches: bytes, offset: int) -> int | None:
    """The estimate for the first batch of ``batches`` (a Fetch answer's records)."""
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
