"""Before authentication a SASL listener reads frames of at most
sasl.server.max.receive.size bytes (Kafka's key, default 524288): a larger
size prefix closes the connection at once, before its bytes are read, so an
unauthenticated peer cannot make the broker buffer socket.request.max.bytes."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from sasl_fixtures import PASSWORDS, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker

from raw_wire import call, encode_request

KAFKA_DEFAULT = 524288


def _closed_at_once(s: socket.socket) -> bool:
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def _oversized(s: socket.socket, size: int) -> None:
    # Only the size prefix and a few bytes: the broker must not wait for the rest.
    s.sendall(struct.pack(">i", size) + b"\x00\x11\x00\x01")


@pytest.mark.parametrize(("configured", "size"), [(None, KAFKA_DEFAULT + 1), ("1000", 1001)])
def test_a_larger_frame_before_authentication_closes_at_once(
    tmp_path: Path, configured: str | None, size: int
) -> None:
    overrides = {} if configured is None else {"sasl.server.max.receive.size": configured}
    b = sasl_broker(tmp_path / "data", **overrides).start()
    try:
        with socket.create_connection(("127.0.0.1", b.port), 30) as s:
            started = time.monotonic()
            _oversized(s, size)
            assert _closed_at_once(s)
            assert time.monotonic() - started < 5
    finally:
        b.stop()


def test_after_authentication_socket_request_max_bytes_applies(tmp_path: Path) -> None:
    b: ThreadBroker = sasl_broker(tmp_path / "data", **{"sasl.server.max.receive.size": "1000"})
    b.start()
    try:
        with socket.create_connection(("127.0.0.1", b.port), 30) as s:
            handshake, _ = call(s, SaslHandshakeRequest(mechanism="PLAIN"))
            assert handshake.error_code == ErrorCode.none
            token = f"\0alice\0{PASSWORDS['alice']}".encode()
            response, _ = call(s, SaslAuthenticateRequest(auth_bytes=token))
            assert response.error_code == ErrorCode.none
            # Over the pre-authentication bound, well within socket.request.max.bytes.
            names = tuple(f"{i:03d}" + "t" * 100 for i in range(20))
            big = MetadataRequest(
                topics=tuple(MetadataRequestTopic(topic_id=None, name=n) for n in names),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            assert len(encode_request(big)) > 1000
            metadata, _ = call(s, big)
            assert [t.name for t in metadata.topics] == list(names)
    finally:
        b.stop()
