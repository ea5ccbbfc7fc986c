"""Keeping only some records of a record batch, without re-encoding them.

A filtered batch keeps its base offset, base timestamp and last offset delta, as
Kafka's cleaner does: every kept record's offset and timestamp deltas stay valid,
so its bytes are copied unchanged, and the header still names the batch's last
offset and last sequence, which rebuilding the idempotent producer state reads.
Only the record count, the max timestamp and the CRC change (a compressed batch
has its kept records compressed again with the same codec).

A batch whose records all go but whose header must stay (it holds a producer's
last sequence, or it ends a cleaned segment) becomes an *empty* batch: the same
header with no records, uncompressed. Kafka writes those too and clients skip them,
moving on to the batch's last offset + 1.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kgroups.records.batch import (
    COMPRESSION_MASK,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    BatchHeader,
    batch_crc,
)
from kgroups.records.compression import compress
from kgroups.records.scan import ScannedRecord, scan_records

__all__ = ["RecordSpan", "empty_batch", "filtered_batch", "parse_records"]

_CRC = struct.Struct(">I")

# One record of a batch: (start, end) of its bytes within the batch's records
# section, offset delta, timestamp delta, key, whether its value is null, then
# what only other readers use.
RecordSpan = ScannedRecord


def parse_records(data: bytes, count: int) -> list[RecordSpan]:
    """Locate the ``count`` records in a records section."""
    return scan_records(data, count)


def _header(
    header: BatchHeader, attributes: int, max_timestamp: int, count: int, size: int
) -> bytearray:
    out = bytearray(size)
    HEADER_STRUCT.pack_into(
        out,
        0,
        header.base_offset,
        size - LOG_OVERHEAD,
        header.partition_leader_epoch,
        2,
        0,
        attributes,
        header.last_offset_delta,
        header.base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    return out


def _seal(out: bytearray) -> bytes:
    _CRC.pack_into(out, CRC_OFFSET, batch_crc(out, len(out)))
    return bytes(out)


def filtered_batch(header: BatchHeader, data: bytes, kept: Sequence[RecordSpan]) -> bytes:
    """``header``'s batch holding only the ``kept`` records of its records section ``data``."""
    body = b"".join(data[span[0] : span[1]] for span in kept)
    if header.timestamp_type:
        max_timestamp = header.max_timestamp  # LogAppendTime: one time for the batch
    else:
        max_timestamp = header.base_timestamp + max(span[3] for span in kept)
    codec = header.attributes & COMPRESSION_MASK
    if codec:
        body = compress(codec, body)
    out = _header(header, header.attributes, max_timestamp, len(kept), HEADER_SIZE + len(body))
    out[HEADER_SIZE:] = body
    return _seal(out)


def empty_batch(header: BatchHeader) -> bytes:
    """``header``'s batch with no records left (its offsets and producer fields kept)."""
    attributes = header.attributes & ~COMPRESSION_MASK
    return _seal(_header(header, attributes, header.max_timestamp, 0, HEADER_SIZE))
