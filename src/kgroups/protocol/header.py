"""Request and response headers (v0-v2), read and written by hand: they are
tiny, on every request, and their version depends on the API version inside them."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kio.serial.readers import read_unsigned_varint

_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class MalformedHeader(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def peek_api(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """API key, API version and correlation id: the part every header version shares."""
    if len(frame) < 8:
        raise MalformedHeader(f"request of {len(frame)} bytes is shorter than a header")
    key, version, correlation = _KEY_VERSION_CORRELATION.unpack_from(frame, 0)
    return key, version, correlation


def read_request_header(
    frame: bytes | bytearray | memoryview, flexible: bool
) -> tuple[RequestHeader, int]:
    """Parse the header; returns it and the offset at which the body starts."""
    key, version, correlation = peek_api(frame)
    pos = 8
    if len(frame) < pos + 2:
        raise MalformedHeader("truncated client id")
    (length,) = _INT16.unpack_from(frame, pos)
    pos += 2
    client_id: str | None = None
    if length >= 0:
        if len(frame) < pos + length:
            raise MalformedHeader("truncated client id")
        client_id = str(frame[pos : pos + length], "utf-8", "replace")
        pos += length
    elif length != -1:
        raise MalformedHeader(f"negative client id length {length}")
    if flexible:
        pos = _skip_tagged_fields(frame, pos)
    return RequestHeader(key, version, correlation, client_id), pos


def _skip_tagged_fields(frame: bytes | bytearray | memoryview, pos: int) -> int:
    if isinstance(frame, bytearray):
        frame = memoryview(frame).toreadonly()  # kio's varint reader takes no other
    try:
        count, size = read_unsigned_varint(frame, pos)
        pos += size
        for _ in range(count):
            _tag, size = read_unsigned_varint(frame, pos)
            pos += size
            length, size = read_unsigned_varint(frame, pos)
            pos += size + length
    except Exception as e:
        raise MalformedHeader(f"bad tagged fields: {e}") from None
    if pos > len(frame):
        raise MalformedHeader("truncated tagged fields")
    return pos


def response_header(correlation_id: int, flexible: bool) -> bytes:
    header = _INT32.pack(correlation_id)
    return header + b"\x00" if flexible else header
