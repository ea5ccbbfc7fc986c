"""One Kafka request on a blocking socket, encoded and decoded with kio: for
tests that need the wire answer itself, from any thread."""

from __future__ import annotations

import socket
import struct
from io import BytesIO
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer


def read_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def frame_of(request: Any) -> bytes:
    """A kio request (a flexible version) as a frame, with correlation id 1."""
    body = BytesIO()
    body.write(struct.pack(">hhih", request.__api_key__, request.__version__, 1, 1) + b"t\x00")
    entity_writer(type(request))(body, request)
    payload = body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def read_response(request_type: Any, frame: bytes) -> Any:
    """The response to a request of ``request_type`` from its frame (size excluded)."""
    schema = load_response_schema(request_type.__api_key__, request_type.__version__)
    response, _ = entity_reader(schema)(frame, 5)  # after correlation id and tagged fields
    return response


def call(port: int, request: Any, timeout: float = 300) -> Any:
    """Send one request on a new connection; its response."""
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(frame_of(request))
        frame = read_exactly(s, struct.unpack(">i", read_exactly(s, 4))[0])
    return read_response(type(request), frame)
