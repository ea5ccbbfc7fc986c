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


def call(port: int, request: Any, timeout: float = 300) -> Any:
    """Send one kio request (a flexible version) on a new connection; its response."""
    body = BytesIO()
    body.write(struct.pack(">hhih", request.__api_key__, request.__version__, 1, 1) + b"t\x00")
    entity_writer(type(request))(body, request)
    payload = body.getvalue()
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        frame = read_exactly(s, struct.unpack(">i", read_exactly(s, 4))[0])
    schema = load_response_schema(request.__api_key__, request.__version__)
    response, _ = entity_reader(schema)(frame, 5)  # after correlation id and tagged fields
    return response
