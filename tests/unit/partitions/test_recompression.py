"""Rebuilding produced batches in the topic's codec (compression.type)."""

from __future__ import annotations

import random
import struct

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.batch_validation import validate_batches
from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.recompression import (
    OFF_LOOP_BYTES,
    needs_worker,
    recompress_batches,
    recompressed_payload,
)
from kgroups.partitions.stamping import (
    AppendResult,
    StampedBatches,
    StampingLog,
    record_producers,
    stamp,
)
from kgroups.records.batch import HEADER_SIZE, batch_crc, decode_records, encode_batch, read_header
from kgroups.records.compression import GZIP, NONE, SNAPPY, ZSTD

RECORDS = [(f"k{i}".encode(), b"v" * 50, [("h", b"x")], 1_000 + i) for i in range(20)]


def _recompress(payload: bytes, codec: int, max_message_bytes: int = 1 << 20) -> bytes:
    batches = validate_batches(payload, max_message_bytes=1 << 20, segment_bytes=1 << 30)
    out, placed = recompress_batches(
        payload,
        batches,
        codec,
        3 if codec == ZSTD else -1,
        max_message_bytes=max_message_bytes,
        segment_bytes=1 << 30,
    )
    # What comes out is a valid batch sequence whose headers are the ones returned.
    again = validate_batches(out, max_message_bytes=1 << 20, segment_bytes=1 << 30)
    assert again == placed
    return bytes(out)


def test_every_field_but_the_codec_is_kept() -> None:
    payload = encode_batch(
        RECORDS,
        compression=GZIP,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        is_transactional=True,
    )
    out = _recompress(payload, ZSTD)
    before, after = read_header(payload), read_header(out)
    assert after.compression == ZSTD
    assert after._replace(crc=0, attributes=0, batch_length=0) == before._replace(
        crc=0, attributes=0, batch_length=0
    )
    assert after.attributes & ~0x07 == before.attributes & ~0x07
    assert decode_records(out) == decode_records(payload)


def test_a_batch_in_the_topics_codec_is_untouched() -> None:
    payload = encode_batch(RECORDS, compression=SNAPPY)
    batches = validate_batches(payload, max_message_bytes=1 << 20, segment_bytes=1 << 30)
    out, placed = recompress_batches(
        payload, batches, SNAPPY, 0, max_message_bytes=1 << 20, segment_bytes=1 << 30
    )
    assert out is payload and placed is batches


def test_several_batches_each_rebuilt_where_needed() -> None:
    first = encode_batch(RECORDS[:5], compression=NONE)
    second = encode_batch(RECORDS[5:], compression=ZSTD)
    out = _recompress(first + second, GZIP)
    headers = [read_header(out)]
    headers.append(read_header(out, headers[0].batch_length + 12))
    assert [h.compression for h in headers] == [GZIP, GZIP]
    records = decode_records(out[: headers[0].batch_length + 12]) + decode_records(
        out[headers[0].batch_length + 12 :]
    )
    assert [(r.key, r.timestamp) for r in records] == [(k, ts) for k, _v, _h, ts in RECORDS]


def test_uncompressed_offset_deltas_are_renumbered_before_compressing() -> None:
    # An uncompressed batch whose records carry offset deltas 0, 2, 4... (the
    # validator lets that pass for uncompressed batches, as Kafka does).
    payload = bytearray(encode_batch(RECORDS[:3]))
    pos = HEADER_SIZE
    for i in range(3):
        length = payload[pos] >> 1
        # record: length, attributes, timestamp delta (1 byte), offset delta (1 byte)
        payload[pos + 3] = (2 * i) << 1
        pos += 1 + length
    struct.pack_into(">I", payload, 17, batch_crc(payload, len(payload)))
    out = _recompress(bytes(payload), ZSTD)
    assert read_header(out).compression == ZSTD
    assert [r.offset for r in decode_records(out)] == [0, 1, 2]
    assert [r.key for r in decode_records(out)] == [b"k0", b"k1", b"k2"]


def test_a_rebuilt_batch_past_max_message_bytes_is_message_too_large() -> None:
    incompressible = [(None, random.Random(1).randbytes(10_000), [], 0)]
    payload = encode_batch(incompressible, compression=NONE)
    with pytest.raises(KafkaError) as exc:
        _recompress(payload, GZIP, max_message_bytes=len(payload))
    assert exc.value.error_code == ErrorCode.message_too_large


class _Log(StampingLog):
    def __init__(self, config: LogConfig) -> None:
        self.config = config
        self.producers = ProducerStateManager()
        self.leader_epoch = 3

    @property
    def log_start_offset(self) -> int:
        return 0


def test_log_append_time_stamps_the_rebuilt_batch() -> None:
    config = LogConfig().with_overrides(
        {"compression.type": "zstd", "message.timestamp.type": "LogAppendTime"}
    )
    stamped = stamp(
        _Log(config), encode_batch(RECORDS, compression=GZIP), 10, 5_000, from_client=True
    )
    assert isinstance(stamped, StampedBatches)
    out = bytes(stamped.buf)
    validate_batches(out, max_message_bytes=1 << 20, segment_bytes=1 << 30, from_client=False)
    header = read_header(out)
    assert header.compression == ZSTD and header.timestamp_type == 1
    assert header.base_offset == 10 and header.partition_leader_epoch == 3
    assert {r.timestamp for r in decode_records(out)} == {5_000}


def test_a_retried_batch_is_still_a_duplicate_once_rebuilt() -> None:
    log = _Log(LogConfig().with_overrides({"compression.type": "lz4"}))
    batch = encode_batch(
        RECORDS, compression=GZIP, producer_id=9, producer_epoch=0, base_sequence=0
    )
    first = stamp(log, batch, 0, 0, from_client=True)
    assert isinstance(first, StampedBatches)
    record_producers(log.producers, first)
    again = stamp(log, batch, len(RECORDS), 0, from_client=True)
    assert isinstance(again, AppendResult) and again.duplicate
    assert (again.base_offset, again.last_offset) == (0, len(RECORDS) - 1)


def test_the_worker_thread_rebuild_leaves_refusals_to_the_append() -> None:
    zstd = LogConfig().with_overrides({"compression.type": "zstd"})
    payload = encode_batch(RECORDS, compression=GZIP)
    rebuilt = recompressed_payload(payload, zstd)
    assert read_header(rebuilt).compression == ZSTD
    assert decode_records(rebuilt) == decode_records(payload)
    assert recompressed_payload(payload, LogConfig()) is payload
    corrupt = payload[:-1] + bytes([payload[-1] ^ 1])
    assert recompressed_payload(corrupt, zstd) is corrupt
    with pytest.raises(KafkaError) as exc:
        stamp(_Log(zstd), corrupt, 0, 0, from_client=True)
    assert exc.value.error_code == ErrorCode.corrupt_message


def test_compressed_or_big_payloads_are_rebuilt_off_the_loop() -> None:
    small = encode_batch(RECORDS)
    assert not needs_worker(small)
    # A few kilobytes of gzip may hold megabytes of records.
    bomb = encode_batch([(None, bytes(5_000_000), [], 0)], compression=GZIP)
    assert len(bomb) < 10_000 and needs_worker(bomb)
    assert needs_worker(small + encode_batch(RECORDS, compression=SNAPPY))
    assert needs_worker(encode_batch([(None, bytes(OFF_LOOP_BYTES), [], 0)]))
    assert not needs_worker(b"\x00" * 100)  # refused by the append, not rebuilt


@pytest.mark.parametrize(
    ("topic_type", "codecs", "accepted"),
    [
        ("producer", (NONE, NONE), True),
        ("uncompressed", (NONE, NONE), True),
        ("producer", (NONE, GZIP), False),
        ("uncompressed", (GZIP, GZIP), False),
        ("zstd", (NONE, NONE), False),
    ],
)
def test_several_batches_only_when_nothing_is_compressed(
    topic_type: str, codecs: tuple[int, int], accepted: bool
) -> None:
    # As Kafka's LogValidator: "Compressed outer record has more than one batch".
    payload = b"".join(encode_batch(RECORDS[:3], compression=codec) for codec in codecs)
    log = _Log(LogConfig().with_overrides({"compression.type": topic_type}))
    if accepted:
        assert isinstance(stamp(log, payload, 0, 0, from_client=True), StampedBatches)
        return
    with pytest.raises(KafkaError) as exc:
        stamp(log, payload, 0, 0, from_client=True)
    assert exc.value.error_code == ErrorCode.invalid_record
