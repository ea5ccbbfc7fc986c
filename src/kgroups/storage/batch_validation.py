"""Checking a produce payload and stamping it with offsets, as Kafka's log does.

A payload is one or more record batches back to back. Each must be a whole magic
v2 batch with a valid CRC; Kafka's checks and error codes apply in Kafka's order:

- magic other than 2                      UNSUPPORTED_FOR_MESSAGE_FORMAT
- length too small or past the payload    CORRUPT_MESSAGE
- batch larger than max.message.bytes     MESSAGE_TOO_LARGE
- CRC32C mismatch                         CORRUPT_MESSAGE
- unknown compression codec               UNSUPPORTED_COMPRESSION_TYPE
- base offset != 0, bad record count, control batch from a client, producer id
  without a sequence, keyless record on a compacted topic        INVALID_RECORD
- the whole payload larger than segment.bytes                    RECORD_LIST_TOO_LARGE

Batches are stored as the client sent them, compressed ones included. Only the
fields outside the CRC (base offset, partition leader epoch) are rewritten, plus,
for LogAppendTime topics, the timestamp type bit and max timestamp, after which
the CRC is recomputed.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from kgroups.errors import ErrorCode, KafkaError
from kgroups.storage.records import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    BatchMeta,
    decode_records,
)

__all__ = ["assign_offsets", "validate_batches"]

_HEADER = HEADER_STRUCT
# Building the NamedTuple straight from the unpacked tuple skips _make's overhead.
_new_tuple = tuple.__new__
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def validate_batches(
    payload: bytes | bytearray | memoryview,
    *,
    max_message_bytes: int,
    segment_bytes: int,
    from_client: bool = True,
    require_keys: bool = False,
) -> list[tuple[int, BatchHeader]]:
    """Split ``payload`` into batches and check each; returns ``(position, header)``.

    ``from_client`` applies the checks Kafka makes only on producer input (the
    broker's own writes may carry control batches); ``require_keys`` is set for
    compacted topics.
    """
    end = len(payload)
    if end == 0:
        raise KafkaError(ErrorCode.invalid_record, "produce payload holds no record batch")
    batches: list[tuple[int, BatchHeader]] = []
    view = memoryview(payload)
    unpack = _HEADER.unpack_from
    pos = 0
    while pos < end:
        if pos + HEADER_SIZE > end:
            _raise_short(payload, pos)
        fields = unpack(payload, pos)
        magic = fields[3]
        if magic != 2:
            raise _old_magic(magic)
        batch_length = fields[1]
        size = batch_length + LOG_OVERHEAD
        if size < HEADER_SIZE:
            raise _corrupt(f"record batch at byte {pos} has invalid length {batch_length}")
        if pos + size > end:
            raise _corrupt(
                f"truncated record batch at byte {pos}: length {batch_length} "
                f"but only {end - pos - LOG_OVERHEAD} bytes follow"
            )
        if size > max_message_bytes:
            raise KafkaError(
                ErrorCode.message_too_large,
                f"the record batch size is {size} bytes which exceeds the maximum "
                f"configured value of {max_message_bytes}",
            )
        if crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size]) != fields[4]:
            raise _corrupt(f"record batch at byte {pos} fails its CRC check")
        header: BatchHeader = _new_tuple(BatchHeader, fields)
        if fields[5] & 0x07 > 4:
            raise KafkaError(
                ErrorCode.unsupported_compression_type,
                f"compression codec {fields[5] & 0x07} is not supported",
            )
        if from_client:
            _check_client_batch(header)
            if require_keys:
                _check_keys(view[pos : pos + size])
        batches.append((pos, header))
        pos += size
    if end > segment_bytes:
        raise KafkaError(
            ErrorCode.record_list_too_large,
            f"the produce payload is {end} bytes, more than segment.bytes {segment_bytes}",
        )
    return batches


def _raise_short(payload: bytes | bytearray | memoryview, pos: int) -> None:
    """A tail shorter than a batch header: old magic (shorter formats) or truncation."""
    if pos + 17 <= len(payload):
        magic = payload[pos + 16]
        if magic != 2:
            raise _old_magic(magic)
    raise _corrupt(f"truncated record batch at byte {pos}")


def _old_magic(magic: int) -> KafkaError:
    return KafkaError(
        ErrorCode.unsupported_for_message_format,
        f"record batch magic {magic} is not supported; only magic 2 is",
    )


def _corrupt(message: str) -> KafkaError:
    return KafkaError(ErrorCode.corrupt_message, message)


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_record, message)


# The smallest possible record: seven one-byte fields (length, attributes,
# timestamp delta, offset delta, key length, value length, header count).
_MIN_RECORD_SIZE = 7


def _check_client_batch(header: BatchHeader) -> None:
    if (
        header.base_offset == 0
        and header.records_count == header.last_offset_delta + 1 > 0
        and not header.attributes & CONTROL_MASK
        and (header.producer_id < 0 or header.base_sequence >= 0)
        and (
            header.attributes & 0x07
            or header.records_count * _MIN_RECORD_SIZE <= header.size - HEADER_SIZE
        )
    ):
        return
    if header.base_offset != 0:
        raise _invalid(f"the base offset of a produced batch must be 0, not {header.base_offset}")
    if header.records_count < 1 or header.records_count != header.last_offset_delta + 1:
        raise _invalid(
            f"record batch claims {header.records_count} records but last offset delta "
            f"{header.last_offset_delta}"
        )
    if header.attributes & CONTROL_MASK:
        raise _invalid("clients are not allowed to write control records")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise _invalid(
            f"invalid sequence number {header.base_sequence} in record batch with "
            f"producer id {header.producer_id}"
        )
    # An uncompressed batch cannot hold more records than its bytes allow; this
    # keeps a forged count from consuming offsets. (Compressed batches would need
    # decompressing to check, which the append path avoids.)
    raise _invalid(
        f"record batch of {header.size} bytes cannot hold {header.records_count} records"
    )


def _check_keys(batch: memoryview) -> None:
    for record in decode_records(batch):
        if record.key is None:
            raise _invalid("compacted topic cannot accept a record without a key")


def assign_offsets(
    buf: bytearray,
    batches: list[tuple[int, BatchHeader]],
    first_offset: int,
    *,
    partition_leader_epoch: int,
    log_append_time: int | None,
) -> list[BatchMeta]:
    """Stamp offsets (and the leader epoch) into ``buf`` in place.

    With ``log_append_time`` (LogAppendTime topics) each batch is marked as such
    and its max timestamp set to it; otherwise a stray LogAppendTime bit from the
    producer is cleared, as Kafka stores CreateTime batches.
    """
    metas: list[BatchMeta] = []
    offset = first_offset
    for pos, header in batches:
        _INT64.pack_into(buf, pos, offset)
        _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
        max_timestamp = header.max_timestamp
        if log_append_time is not None:
            if not header.attributes & TIMESTAMP_TYPE_MASK or max_timestamp != log_append_time:
                _restamp(buf, pos, header, header.attributes | TIMESTAMP_TYPE_MASK, log_append_time)
            max_timestamp = log_append_time
        elif header.attributes & TIMESTAMP_TYPE_MASK:
            _restamp(buf, pos, header, header.attributes & ~TIMESTAMP_TYPE_MASK, max_timestamp)
        last = offset + header.last_offset_delta
        metas.append((pos, header.size, last, max_timestamp))
        offset = last + 1
    return metas


def _restamp(
    buf: bytearray, pos: int, header: BatchHeader, attributes: int, max_timestamp: int
) -> None:
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, max_timestamp)
    with memoryview(buf) as view:
        crc = crc32c(view[pos + ATTRIBUTES_OFFSET : pos + header.size])
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc)
