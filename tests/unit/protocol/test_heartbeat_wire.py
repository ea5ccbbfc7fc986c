"""The hand-written Heartbeat reader and answers agree with kio's encoding."""

from __future__ import annotations

import datetime
import importlib
import struct
from typing import Any

import pytest

from kgroups.errors import ErrorCode
from kgroups.protocol.heartbeat_wire import HeartbeatFields, heartbeat_answer, read_heartbeat
from kgroups.protocol.types import GroupId, i32

from raw_wire import decode_response, encode_request

VERSIONS = range(5)


def _schema(version: int, side: str) -> Any:
    module = importlib.import_module(f"kio.schema.heartbeat.v{version}.{side}")
    return module.HeartbeatRequest if side == "request" else module.HeartbeatResponse


def _request(version: int, instance_id: str | None = None, **fields: Any) -> Any:
    values: dict[str, Any] = {
        "group_id": GroupId("orders"),
        "generation_id": i32(7),
        "member_id": "rdkafka-3f1c",
        **fields,
    }
    if version >= 3:
        values["group_instance_id"] = instance_id
    return _schema(version, "request")(**values)


@pytest.mark.parametrize("version", VERSIONS)
def test_reads_what_kio_writes(version: int) -> None:
    instance_id = "instance-1" if version >= 3 else None
    frame = encode_request(_request(version, instance_id), correlation=42)[4:]
    assert read_heartbeat(frame) == (
        version,
        42,
        HeartbeatFields("orders", 7, "rdkafka-3f1c", instance_id),
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_non_ascii_ids_and_a_null_instance_id(version: int) -> None:
    request = _request(version, group_id=GroupId("grüppe-ß"), member_id="mitglied-é")
    read = read_heartbeat(encode_request(request, correlation=1)[4:])
    assert read is not None
    assert read[2] == HeartbeatFields("grüppe-ß", 7, "mitglied-é", None)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "error", [ErrorCode.none, ErrorCode.rebalance_in_progress, ErrorCode.fenced_instance_id]
)
def test_answers_decode_as_kio_reads_them(version: int, error: ErrorCode) -> None:
    answer = heartbeat_answer(version, 1234, error)
    (size,) = struct.unpack_from(">i", answer)
    assert size == len(answer) - 4
    assert struct.unpack_from(">i", answer, 4) == (1234,)
    response = decode_response(_schema(version, "request"), answer[4:])
    assert response.error_code == error
    if version >= 1:
        assert response.throttle_time == datetime.timedelta(0)


def _v4() -> bytes:
    return encode_request(_request(4), correlation=1)[4:]


@pytest.mark.parametrize(
    ("name", "frame"),
    [
        ("trailing bytes", _v4() + b"\x00"),
        ("truncated", _v4()[:-3]),
        ("body tagged fields", _v4()[:-1] + b"\x01\x00\x00"),
        ("bad UTF-8 in the group id", _v4().replace(b"orders", b"\xff\xfe\xfdder")),
        ("an unknown version", _v4()[:2] + b"\x00\x09" + _v4()[4:]),
        ("another API", b"\x00\x0b" + _v4()[2:]),
        (
            "a null v0 group id",
            encode_request(_request(0), 1)[4:].replace(b"\x00\x06orders", b"\xff\xff"),
        ),
        ("a header shorter than its fields", b"\x00\x0c\x00\x04\x00\x00"),
    ],
)
def test_anything_unexpected_takes_the_general_path(name: str, frame: bytes) -> None:
    assert read_heartbeat(frame) is None, name
