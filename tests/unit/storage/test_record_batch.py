"""Record batch v2 codec: round trips, CRC, framing, and agreement with kafka-python."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import (
    HEADER_SIZE,
    batch_crc,
    decode_records,
    encode_batch,
    iter_batches,
    read_header,
    records_section,
)
from kgroups.records.filter import filtered_batch
from kgroups.records.scan import scan_records

CODECS = [0, 1, 2, 3, 4]

optional_bytes = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=20), optional_bytes), max_size=4)
timestamps = st.integers(min_value=0, max_value=2**45)
records = st.lists(
    st.tuples(optional_bytes, optional_bytes, headers, timestamps), min_size=1, max_size=30
)


@settings(max_examples=150, deadline=None)
@given(
    records=records,
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(min_value=0, max_value=2**62),
)
def test_encode_decode_round_trip(records: list, codec: int, base_offset: int) -> None:
    batch = encode_batch(records, base_offset=base_offset, compression=codec)
    header = read_header(batch)
    assert header.magic == 2
    assert header.size == len(batch)
    assert header.compression == codec
    assert header.records_count == len(records)
    assert header.last_offset == base_offset + len(records) - 1
    assert header.base_timestamp == records[0][3]
    assert header.max_timestamp == max(r[3] for r in records)
    assert header.crc == batch_crc(batch, len(batch))
    decoded = decode_records(batch)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in decoded] == [
        (k, v, list(h), ts) for k, v, h, ts in records
    ]
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))


def test_header_properties() -> None:
    batch = encode_batch(
        [(b"k", b"v", [], 5)],
        compression=3,
        producer_id=42,
        producer_epoch=3,
        base_sequence=2**31 - 1,
        timestamp_type=1,
        is_transactional=True,
    )
    h = read_header(batch)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 2**31 - 1)
    assert h.compression == 3
    assert h.timestamp_type == 1
    assert h.is_transactional and not h.is_control
    assert h.size == h.batch_length + 12
    assert h.last_sequence == 2**31 - 1


def test_last_sequence_wraps() -> None:
    batch = encode_batch(
        [(None, b"v", [], 1)] * 3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2
    )
    assert read_header(batch).last_sequence == 0


def test_log_append_time_batches_report_the_batch_timestamp() -> None:
    batch = bytearray(encode_batch([(None, b"a", [], 10), (None, b"b", [], 20)]))
    struct.pack_into(">h", batch, 21, 0x08)
    struct.pack_into(">q", batch, 35, 999)
    assert [r.timestamp for r in decode_records(bytes(batch))] == [999, 999]


def test_crc_detects_any_bit_flip() -> None:
    batch = encode_batch([(b"key", b"value" * 20, [("h", b"x")], 1234)] * 3)
    for i in range(21, len(batch)):
        flipped = bytearray(batch)
        flipped[i] ^= 0x01
        assert batch_crc(flipped, len(flipped)) != read_header(flipped).crc, i


def test_iter_batches_stops_at_a_partial_trailing_batch() -> None:
    a = encode_batch([(b"a", b"1", [], 1)])
    b = encode_batch([(b"b", b"2" * 100, [], 2)], base_offset=1)
    buf = a + b
    assert [pos for pos, _ in iter_batches(buf)] == [0, len(a)]
    for cut in (1, HEADER_SIZE - 1, HEADER_SIZE, len(b) - 1):
        assert [pos for pos, _ in iter_batches(buf[: len(a) + cut])] == [0]
    assert list(iter_batches(b"")) == []


def test_iter_batches_rejects_an_impossible_length() -> None:
    bad = bytearray(encode_batch([(b"a", b"1", [], 1)]))
    struct.pack_into(">i", bad, 8, 3)
    with pytest.raises(KafkaError) as exc:
        list(iter_batches(bytes(bad)))
    assert exc.value.error_code == ErrorCode.corrupt_message


def test_decode_rejects_records_running_past_the_batch() -> None:
    batch = bytearray(encode_batch([(b"a", b"1", [], 1)] * 2))
    struct.pack_into(">i", batch, 57, 5)  # claims 5 records, holds 2
    with pytest.raises(KafkaError) as exc:
        decode_records(bytes(batch))
    assert exc.value.error_code == ErrorCode.corrupt_message


def test_decode_rejects_old_magic() -> None:
    batch = bytearray(encode_batch([(b"a", b"1", [], 1)]))
    batch[16] = 1
    with pytest.raises(KafkaError) as exc:
        decode_records(bytes(batch))
    assert exc.value.error_code == ErrorCode.unsupported_for_message_format


def test_large_varints() -> None:
    big = b"x" * 70_000  # multi-byte length varints
    records = [(big, None, [("k" * 200, big)], 1), (None, big, [], 1 + 2**40)]
    decoded = decode_records(encode_batch(records, base_offset=7))
    assert decoded[0].key == big and decoded[0].value is None
    assert decoded[0].headers == (("k" * 200, big),)
    assert decoded[1].timestamp == 1 + 2**40
    assert decoded[1].offset == 8


@pytest.mark.parametrize("codec", CODECS)
def test_reads_batches_built_by_kafka_python(codec: int) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=7,
        producer_epoch=1,
        base_sequence=10,
        batch_size=1 << 20,
    )
    expected = []
    for i in range(50):
        key = None if i % 7 == 0 else b"key-%d" % i
        value = b"value-%d " % i * 20
        hdrs = [("trace", b"id-%d" % i), ("empty", None)] if i % 3 == 0 else []
        builder.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=hdrs)
        expected.append((i, 1_700_000_000_000 + i, key, value, tuple(hdrs)))
    batch = bytes(builder.build())
    header = read_header(batch)
    assert header.crc == batch_crc(batch, len(batch))
    assert header.producer_id == 7 and header.base_sequence == 10
    assert [tuple(r) for r in decode_records(batch)] == expected


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    records = [(b"k%d" % i, b"v" * i, [("h", b"%d" % i)], 1000 + i) for i in range(40)]
    batch = encode_batch(records, base_offset=100, compression=codec)
    parsed = DefaultRecordBatch(bytearray(batch))
    assert parsed.validate_crc()
    got = [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in parsed]
    assert got == [
        (100 + i, k, v, [(hk, hv) for hk, hv in h], ts) for i, (k, v, h, ts) in enumerate(records)
    ]


def test_encode_needs_a_record() -> None:
    with pytest.raises(ValueError):
        encode_batch([])


@settings(max_examples=150, deadline=None)
@given(
    records=records,
    codec=st.sampled_from(CODECS),
    kept=st.lists(st.booleans(), min_size=30, max_size=30),
    window=st.tuples(st.integers(-3, 33), st.integers(-3, 33)),
)
def test_decoding_an_offset_window_gives_the_records_in_it(
    records: list, codec: int, kept: list[bool], window: tuple[int, int]
) -> None:
    # A batch compaction left holes in (offset deltas not contiguous), or a whole one.
    base = 100
    batch = encode_batch(records, base_offset=base, compression=codec)
    header = read_header(batch)
    spans = scan_records(records_section(batch, header), header.records_count)
    survivors = [s for s, keep in zip(spans, kept, strict=False) if keep] or spans[:1]
    batch = filtered_batch(header, records_section(batch, header), survivors)
    first, last = base + window[0], base + window[1]
    everything = decode_records(batch)
    assert decode_records(batch, first_offset=first, last_offset=last) == [
        r for r in everything if first <= r.offset <= last
    ]
    assert decode_records(batch, first_offset=first) == [r for r in everything if first <= r.offset]
    assert decode_records(batch, last_offset=last) == [r for r in everything if r.offset <= last]
