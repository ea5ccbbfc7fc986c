"""A client id as long as a request header allows (32,767 bytes) makes a member
id that every version of every response can still carry: such a group never
disconnects the admin tools that describe it."""

from __future__ import annotations

import socket
import struct
from datetime import timedelta
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.join_group.v6.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.serial import entity_reader

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId

from broker_thread import BrokerThread
from kio_samples import encode
from wire_fuzz import framed, header

MAX_STRING_BYTES = 32767


def _call(port: int, api_key: int, version: int, request: Any, client_id: bytes = b"t") -> Any:
    """Send one request on its own connection; its decoded response, or None
    when the broker closed the connection instead of answering."""
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        s.settimeout(10)
        s.sendall(framed(header(api_key, version, client_id) + encode(request)))
        head = _read(s, 4)
        payload = _read(s, struct.unpack(">i", head)[0]) if head else None
    if payload is None:
        return None
    codec = apis.codec(api_key, version)
    body_at = 5 if codec.response_header_flexible else 4
    response, _ = entity_reader(codec.response_type)(payload, body_at)
    return response


def _read(s: socket.socket, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def _join(port: int, member_id: str, client_id: bytes) -> Any:
    request = JoinGroupRequest(
        group_id=GroupId("long"),
        session_timeout=timedelta(seconds=30),
        rebalance_timeout=timedelta(seconds=30),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00"),),
    )
    return _call(port, apis.JOIN_GROUP, 6, request, client_id)


@pytest.mark.parametrize(
    "client_id", [b"c" * MAX_STRING_BYTES, b"\xff" * MAX_STRING_BYTES], ids=["ascii", "not-utf8"]
)
def test_a_group_of_a_longest_client_id_can_be_described_in_every_version(
    broker: BrokerThread, client_id: bytes
) -> None:
    assert broker.broker is not None
    port = broker.broker.port
    first = _join(port, "", client_id)
    assert first.error_code == ErrorCode.member_id_required
    member_id = first.member_id
    joined = _join(port, member_id, client_id)
    assert joined.error_code == ErrorCode.none and joined.member_id == member_id

    for version in range(0, 6):
        request = load_request_schema(apis.DESCRIBE_GROUPS, version)(
            groups=(GroupId("long"),),
            **({"include_authorized_operations": False} if version >= 3 else {}),
        )
        response = _call(port, apis.DESCRIBE_GROUPS, version, request)
        assert response is not None, f"DescribeGroups v{version}: connection closed"
        (group,) = response.groups
        assert [m.member_id for m in group.members] == [member_id]
        assert len(group.members[0].client_id.encode()) <= MAX_STRING_BYTES
    assert len(member_id.encode()) <= MAX_STRING_BYTES
    assert member_id.startswith("c" * 1000 if client_id[0] == ord("c") else "\ufffd" * 1000)
