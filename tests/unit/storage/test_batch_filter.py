"""Filtering the records of one batch: the kept records come out byte for byte."""

from __future__ import annotations

import pytest
from storage_helpers import NOW

from kgroups.errors import KafkaError
from kgroups.partitions.batch_validation import validate_batches
from kgroups.records.batch import (
    batch_crc,
    decode_records,
    encode_batch,
    read_header,
    records_section,
)
from kgroups.records.filter import empty_batch, filtered_batch, parse_records

RECORDS = [
    (b"a", b"1", [("h", b"x")], NOW + 5),
    (None, b"2", [], NOW + 1),
    (b"c", None, [], NOW + 9),
    (b"d" * 300, b"4" * 1000, [("h1", None), ("h2", b"y")], NOW + 3),
]


def batch(compression: int = 0, timestamp_type: int = 0) -> bytes:
    return encode_batch(
        RECORDS,
        base_offset=100,
        compression=compression,
        producer_id=9,
        producer_epoch=1,
        base_sequence=40,
        timestamp_type=timestamp_type,
    )


def test_spans_locate_keys_tombstones_and_offsets() -> None:
    raw = batch()
    header = read_header(raw)
    spans = parse_records(records_section(raw, header), header.records_count)
    assert [(s[2], s[4], s[5]) for s in spans] == [
        (0, b"a", False),
        (1, None, False),
        (2, b"c", True),
        (3, b"d" * 300, False),
    ]
    assert [s[3] for s in spans] == [0, -4, 4, -2]


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])
def test_a_filtered_batch_keeps_offsets_timestamps_headers_and_producer_fields(
    compression: int,
) -> None:
    raw = batch(compression)
    header = read_header(raw)
    data = records_section(raw, header)
    spans = parse_records(data, header.records_count)
    out = filtered_batch(header, data, [spans[0], spans[3]])
    new = read_header(out)
    assert batch_crc(out, len(out)) == new.crc
    assert (new.base_offset, new.last_offset, new.records_count) == (100, 103, 2)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (9, 1, 40)
    assert new.compression == compression
    assert (new.base_timestamp, new.max_timestamp) == (NOW + 5, NOW + 5)
    original = decode_records(raw)
    assert decode_records(out) == [original[0], original[3]]
    # It is a batch any reader (and this broker's own checks) accepts.
    validate_batches(out, max_message_bytes=1 << 20, segment_bytes=1 << 30, from_client=False)


def test_log_append_time_batches_keep_their_one_timestamp() -> None:
    raw = batch(timestamp_type=1)
    header = read_header(raw)
    data = records_section(raw, header)
    out = filtered_batch(header, data, parse_records(data, header.records_count)[1:2])
    assert read_header(out).max_timestamp == header.max_timestamp


def test_an_empty_batch_keeps_the_header_facts() -> None:
    header = read_header(batch(compression=3))
    out = empty_batch(header)
    new = read_header(out)
    assert len(out) == new.size == 61
    assert batch_crc(out, len(out)) == new.crc
    assert (new.base_offset, new.last_offset, new.records_count, new.compression) == (
        100,
        103,
        0,
        0,
    )
    assert (new.last_sequence, new.max_timestamp) == (43, header.max_timestamp)
    assert decode_records(out) == []


def test_records_running_past_the_batch_are_corrupt() -> None:
    raw = batch()
    header = read_header(raw)
    data = records_section(raw, header)
    with pytest.raises(KafkaError):
        parse_records(data[:-10], header.records_count)
    with pytest.raises(KafkaError):
        parse_records(data, header.records_count + 1)
