"""Strings read by hand from a request frame, for the connection's shortcuts
(heartbeats, commits) that skip kio's decoder.

Each reader takes the frame and a position and returns the value and the
position after it. Anything a shortcut does not expect (a bad length, a
compact length of more than one varint byte) raises ``Unexpected``: the
request then takes the general path, whose decoder answers it as Kafka does.
"""

from __future__ import annotations

import struct

_INT16 = struct.Struct(">h")


class Unexpected(Exception):
    """A frame of a shape the shortcut does not take."""


def string(frame: bytes, pos: int) -> tuple[str, int]:
    value, pos = nullable_string(frame, pos)
    if value is None:
        raise Unexpected
    return value, pos


def nullable_string(frame: bytes, pos: int) -> tuple[str | None, int]:
    (length,) = _INT16.unpack_from(frame, pos)
    pos += 2
    if length < 0:
        if length != -1:
            raise Unexpected
        return None, pos
    end = pos + length
    if end > len(frame):
        raise Unexpected
    return frame[pos:end].decode(), end


def compact_string(frame: bytes, pos: int) -> tuple[str, int]:
    value, pos = compact_nullable_string(frame, pos)
    if value is None:
        raise Unexpected
    return value, pos


def compact_nullable_string(frame: bytes, pos: int) -> tuple[str | None, int]:
    # Length + 1 as an unsigned varint; one byte covers strings under 127
    # bytes, which every group id, member id and topic name of a real client is.
    length = frame[pos] - 1
    if length >= 0x7F:
        raise Unexpected
    pos += 1
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(frame):
        raise Unexpected
    return frame[pos:end].decode(), end
