"""Kafka requests on a plain blocking socket, encoded and decoded with kio: for
tests that look at the wire answer itself (its size, whether it comes at all),
from any thread."""

from __future__ import annotations

import socket
import struct
from io import BytesIO
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

_SIZE = struct.Struct(">i")


def encode_request(request: Any, correlation: int = 1) -> bytes:
    """One framed request (client id "t") for a kio request entity."""
    buf = BytesIO()
    buf.write(struct.pack(">hhih", request.__api_key__, request.__version__, correlation, 1))
    buf.write(b"t")
    if type(request).__header_schema__.__version__ >= 2:
        buf.write(b"\x00")
    entity_writer(type(request))(buf, request)
    payload = buf.getvalue()
    return _SIZE.pack(len(payload)) + payload


def read_exactly(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


def read_frame(s: socket.socket) -> bytes:
    (size,) = _SIZE.unpack(read_exactly(s, 4))
    return read_exactly(s, size)


def decode_response(request_type: Any, frame: bytes) -> Any:
    """The response to a request of ``request_type`` from its frame (size excluded)."""
    response_type = load_response_schema(request_type.__api_key__, request_type.__version__)
    offset = 5 if response_type.__header_schema__.__version__ >= 1 else 4
    response, _ = entity_reader(response_type)(frame, offset)
    return response


def call(s: socket.socket, request: Any) -> tuple[Any, int]:
    """Send ``request`` and return the decoded response and its frame size."""
    s.sendall(encode_request(request))
    frame = read_frame(s)
    return decode_response(type(request), frame), len(frame) + 4


def call_once(port: int, request: Any, timeout: float = 300) -> Any:
    """Send one request on a new connection; its response."""
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        s.sendall(encode_request(request))
        return decode_response(type(request), read_frame(s))
