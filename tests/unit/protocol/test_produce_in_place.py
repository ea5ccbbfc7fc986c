"""A Produce request read in place is the request kio reads, its records
views of the frame; anything unusual is left to kio."""

import importlib
import struct
from datetime import timedelta
from io import BytesIO
from typing import Any

import pytest
from kio.serial import entity_writer

from kgroups.protocol import apis
from kgroups.protocol.header import read_request_header
from kgroups.protocol.produce_request import read_produce_in_place
from kgroups.protocol.versions import upgrade
from kgroups.records.batch import encode_batch

VERSIONS = range(3, 10)


def _request(version: int, transactional_id: str | None, records: list[bytes | None]) -> Any:
    schema = importlib.import_module(f"kio.schema.produce.v{version}.request")
    topics = tuple(
        schema.TopicProduceData(
            name=name,
            partition_data=tuple(
                schema.PartitionProduceData(index=i, records=r) for i, r in enumerate(records)
            ),
        )
        for name in ("t", "ü-topic")
    )
    return schema.ProduceRequest(
        transactional_id=transactional_id,
        acks=-1,
        timeout=timedelta(milliseconds=30_000),
        topic_data=topics,
    )


def _frame(request: Any, version: int) -> bytearray:
    buf = BytesIO()
    buf.write(struct.pack(">hhih", 0, version, 7, 1) + b"c")
    if version >= 9:
        buf.write(b"\x00")  # the header's tagged fields
    entity_writer(type(request))(buf, request)
    return bytearray(buf.getvalue())


def _kio(frame: bytearray, version: int) -> Any:
    codec = apis.codec(apis.PRODUCE, version)
    _header, offset = read_request_header(bytes(frame), codec.request_header_flexible)
    body, _size = codec.read_request(bytes(frame), offset)
    return upgrade(body, apis.newest(apis.PRODUCE).request_type)


def _in_place(frame: bytearray, version: int) -> Any:
    codec = apis.codec(apis.PRODUCE, version)
    _header, offset = read_request_header(frame, codec.request_header_flexible)
    return read_produce_in_place(frame, offset, version)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("transactional_id", [None, "txn", ""])
def test_the_same_request_as_kio_reads(version: int, transactional_id: str | None) -> None:
    batches = [encode_batch([(None, b"v" * n, (), 0)]) for n in (1, 200, 70_000)]
    frame = _frame(_request(version, transactional_id, [*batches, None]), version)
    read = _in_place(frame, version)
    assert read is not None
    expected = _kio(frame, version)
    assert (read.transactional_id, read.acks, read.timeout) == (
        expected.transactional_id,
        expected.acks,
        expected.timeout,
    )
    for topic, want in zip(read.topic_data, expected.topic_data, strict=True):
        assert topic.name == want.name
        got = [
            (p.index, None if p.records is None else bytes(p.records)) for p in topic.partition_data
        ]
        assert got == [(p.index, p.records) for p in want.partition_data]


def test_records_are_writable_views_of_the_frame() -> None:
    frame = _frame(_request(9, None, [encode_batch([(None, b"v", (), 0)])]), 9)
    records = _in_place(frame, 9).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and not records.readonly
    records[0:8] = b"\x00\x00\x00\x00\x00\x00\x00\x2a"
    assert b"\x00\x00\x00\x00\x00\x00\x00\x2a" in frame


def test_a_tagged_field_is_left_to_kio() -> None:
    frame = _frame(_request(9, None, [b"abc"]), 9)
    assert frame.endswith(b"\x00")
    frame[-1:] = b"\x01\x05\x01\x00"  # one tagged field, unknown tag 5
    assert _in_place(frame, 9) is None


@pytest.mark.parametrize("version", [8, 9])
def test_a_truncated_or_null_topic_array_is_left_to_kio(version: int) -> None:
    frame = _frame(_request(version, None, [b"abcdef"]), version)
    assert _in_place(frame[:-3], version) is None
    codec = apis.codec(apis.PRODUCE, version)
    _header, offset = read_request_header(frame, codec.request_header_flexible)
    # After a null transactional id: acks, timeout, then the topic array's length.
    at = offset + (1 if version >= 9 else 2) + 6
    frame[at : at + (1 if version >= 9 else 4)] = b"\x00" if version >= 9 else b"\xff" * 4
    assert _in_place(frame, version) is None
