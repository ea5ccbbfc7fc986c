"""The hand-written reader of unchanged ConsumerGroupHeartbeats and its
answers agree with kio's encoding."""

from __future__ import annotations

import datetime
import importlib
import struct
from io import BytesIO
from typing import Any

import pytest
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.consumer_heartbeat_wire import (
    UnchangedHeartbeat,
    read_unchanged_heartbeat,
    unchanged_answer,
)
from kgroups.protocol.header import response_header
from kgroups.protocol.types import GroupId, i32

from raw_wire import decode_response, encode_request

VERSIONS = range(2)


def _module(version: int, side: str) -> Any:
    return importlib.import_module(f"kio.schema.consumer_group_heartbeat.v{version}.{side}")


def _request(version: int, **fields: Any) -> Any:
    values: dict[str, Any] = {
        "group_id": GroupId("orders"),
        "member_id": "x7Yz-member",
        "member_epoch": i32(12),
        "topic_partitions": None,
        **fields,
    }
    return _module(version, "request").ConsumerGroupHeartbeatRequest(**values)


def _frame(version: int, **fields: Any) -> bytes:
    return encode_request(_request(version, **fields), correlation=42)[4:]


@pytest.mark.parametrize("version", VERSIONS)
def test_reads_an_unchanged_heartbeat_as_kio_writes_it(version: int) -> None:
    assert read_unchanged_heartbeat(_frame(version)) == (
        version,
        42,
        UnchangedHeartbeat("t", "orders", "x7Yz-member", 12),
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_non_ascii_ids(version: int) -> None:
    read = read_unchanged_heartbeat(
        _frame(version, group_id=GroupId("grüppe-ß"), member_id="mitglied-é")
    )
    assert read is not None and read[2][1:3] == ("grüppe-ß", "mitglied-é")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "fields",
    [
        {"instance_id": "i-1"},
        {"rack_id": "r"},
        {"rebalance_timeout": i32Timedelta.parse(datetime.timedelta(seconds=30))},
        {"subscribed_topic_names": ("t",)},
        {"subscribed_topic_names": ()},
        {"server_assignor": "range"},
        {"topic_partitions": ()},
        {"member_id": "m" * 200},
    ],
)
def test_a_heartbeat_that_says_more_takes_the_general_path(
    version: int, fields: dict[str, Any]
) -> None:
    assert read_unchanged_heartbeat(_frame(version, **fields)) is None


def test_a_regex_takes_the_general_path() -> None:
    assert read_unchanged_heartbeat(_frame(1, subscribed_topic_regex="t.*")) is None


@pytest.mark.parametrize(
    ("name", "frame"),
    [
        ("trailing bytes", _frame(1) + b"\x00"),
        ("truncated", _frame(1)[:-3]),
        ("body tagged fields", _frame(1)[:-1] + b"\x01\x00\x00"),
        ("bad UTF-8 in the group id", _frame(1).replace(b"orders", b"\xff\xfe\xfdder")),
        ("an unknown version", _frame(1)[:2] + b"\x00\x09" + _frame(1)[4:]),
        ("another API", b"\x00\x0c" + _frame(1)[2:]),
        ("header tagged fields", _frame(1).replace(b"\x00\x01t\x00", b"\x00\x01t\x01", 1)),
        ("a header shorter than its fields", b"\x00\x44\x00\x01\x00\x00"),
    ],
)
def test_anything_unexpected_takes_the_general_path(name: str, frame: bytes) -> None:
    assert read_unchanged_heartbeat(frame) is None, name


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("member_id", ["x7Yz-member", "mitglied-é", "m" * 130])
def test_answers_are_the_bytes_kio_writes(version: int, member_id: str) -> None:
    answer = unchanged_answer(version, 1234, member_id, 17, 5_000)
    (size,) = struct.unpack_from(">i", answer)
    assert size == len(answer) - 4
    response = decode_response(_request(version), answer[4:])
    assert response.error_code is ErrorCode.none
    assert (response.member_id, response.member_epoch, response.assignment) == (
        member_id,
        17,
        None,
    )
    assert response.heartbeat_interval.total_seconds() == 5
    buf = BytesIO()
    entity_writer(type(response))(buf, response)
    body = response_header(1234, flexible=True) + buf.getvalue()
    assert answer == struct.pack(">i", len(body)) + body
