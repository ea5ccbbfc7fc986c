"""Storing a producer's batches in the codec its topic names (``compression.type``).

Kafka's LogValidator keeps a batch as the producer compressed it when the
topic's type is ``producer`` (the default) or the batch already uses the
topic's codec; otherwise it rebuilds the batch in the topic's codec. Here the
records section of a v2 batch is the same bytes whatever its codec, so a
rebuild is: decompress the section, compress it with the topic's codec and
level, and write a new header with the new codec bits, length and CRC. Every
other field stays as the producer wrote it: producer id, epoch and base
sequence (idempotence and transactions), the transactional bit, timestamps,
and each record's key, value and headers.

Offsets within the batch must run 0, 1, 2...: the validator checked that of
compressed batches; an uncompressed one whose offset deltas do not is
re-encoded with consecutive ones first, as Kafka's rebuild assigns them.
Control batches never come from producers, and the broker's own batches
(coordinator records, transaction markers) are not passed here.
"""

from __future__ import annotations

import struct

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import has_consecutive_offsets, validate_batches
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import (
    COMPRESSION_MASK,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    BatchHeader,
    batch_crc,
    decode_records,
    encode_batch,
    iter_batches,
    read_header,
    records_section,
)
from kgroups.records.compression import NONE, compress

__all__ = ["OFF_LOOP_BYTES", "needs_worker", "recompress_batches", "recompressed_payload"]

# Uncompressed payloads from this size on are rebuilt on a worker thread before
# the append (``recompressed_payload``): a megabyte takes 10 to 40 ms.
OFF_LOOP_BYTES = 64 * 1024

_UINT32 = struct.Struct(">I")


def recompress_batches(
    payload: bytes | bytearray | memoryview,
    batches: list[tuple[int, BatchHeader]],
    codec: int,
    level: int,
    *,
    max_message_bytes: int,
    segment_bytes: int,
) -> tuple[bytes | bytearray | memoryview, list[tuple[int, BatchHeader]]]:
    """``payload`` with each batch not in ``codec`` rebuilt in it, and the
    new ``(position, header)`` of every batch; unchanged when all are in it.

    A rebuilt batch larger than ``max_message_bytes`` is MESSAGE_TOO_LARGE,
    a payload larger than ``segment_bytes`` RECORD_LIST_TOO_LARGE, as Kafka
    checks what it is about to write."""
    if all(header.attributes & COMPRESSION_MASK == codec for _pos, header in batches):
        return payload, batches
    out = bytearray()
    placed: list[tuple[int, BatchHeader]] = []
    with memoryview(payload) as view:
        for pos, header in batches:
            batch = view[pos : pos + header.size]
            start = len(out)
            if header.attributes & COMPRESSION_MASK == codec:
                out += batch
                placed.append((start, header))
                continue
            out += _rebuild(batch, header, codec, level)
            rebuilt = read_header(out, start)
            if rebuilt.batch_length + LOG_OVERHEAD > max_message_bytes:
                raise KafkaError(
                    ErrorCode.message_too_large,
                    f"the record batch is {rebuilt.batch_length + LOG_OVERHEAD} bytes once "
                    f"compressed as the topic's compression.type asks, more than "
                    f"max.message.bytes {max_message_bytes}",
                )
            placed.append((start, rebuilt))
    if len(out) > segment_bytes:
        raise KafkaError(
            ErrorCode.record_list_too_large,
            f"the produce payload is {len(out)} bytes in the topic's compression.type, "
            f"more than segment.bytes {segment_bytes}",
        )
    return out, placed


def needs_worker(payload: bytes | bytearray | memoryview) -> bool:
    """Whether rebuilding ``payload`` may take long: it is big, or holds a
    compressed batch, whose records may be many times its size."""
    if len(payload) >= OFF_LOOP_BYTES:
        return True
    try:
        return any(header.attributes & COMPRESSION_MASK for _pos, header in iter_batches(payload))
    except KafkaError:
        return False  # the append refuses it


def recompressed_payload(
    payload: bytes | bytearray | memoryview, config: LogConfig
) -> bytes | bytearray | memoryview:
    """``payload`` rebuilt in the codec ``config`` names, for a worker thread;
    as it is when nothing needs rebuilding or it is refused (the append then
    refuses it with the error). The append finds the batches in the topic's
    codec already, or rebuilds them itself if the topic's config changed."""
    if config.recompress is None:
        return payload
    try:
        batches = validate_batches(
            payload,
            max_message_bytes=config.max_message_bytes,
            segment_bytes=config.segment_bytes,
        )
        out, _placed = recompress_batches(
            payload,
            batches,
            *config.recompress,
            max_message_bytes=config.max_message_bytes,
            segment_bytes=config.segment_bytes,
        )
    except KafkaError:
        return payload
    return out


def _rebuild(batch: memoryview, header: BatchHeader, codec: int, level: int) -> bytearray:
    if header.attributes & COMPRESSION_MASK == NONE and not _consecutive(batch, header):
        batch = memoryview(_renumbered(batch, header))
        header = read_header(batch)
    section = records_section(batch, header)
    body = compress(codec, section, level) if codec != NONE else section
    size = HEADER_SIZE + len(body)
    out = bytearray(size)
    HEADER_STRUCT.pack_into(
        out,
        0,
        header.base_offset,
        size - LOG_OVERHEAD,
        header.partition_leader_epoch,
        header.magic,
        0,  # the CRC, once the rest is written
        (header.attributes & ~COMPRESSION_MASK) | codec,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.records_count,
    )
    out[HEADER_SIZE:] = body
    _UINT32.pack_into(out, CRC_OFFSET, batch_crc(out, size))
    return out


def _consecutive(batch: memoryview, header: BatchHeader) -> bool:
    return has_consecutive_offsets(batch, HEADER_SIZE, header.size, header.records_count)


def _renumbered(batch: memoryview, header: BatchHeader) -> bytes:
    """The batch re-encoded uncompressed with offset deltas 0, 1, 2..."""
    return encode_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in decode_records(batch)],
        base_offset=header.base_offset,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
    )
