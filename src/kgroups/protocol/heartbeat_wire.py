"""Heartbeat requests and answers read and written by hand.

Heartbeats are most of a busy coordinator's requests, and all that matters in
one is four fields. Reading them with a few struct calls and answering with
bytes built once per (version, error) costs a fraction of decoding into a kio
object and encoding one back. Anything this reader does not expect (a frame
of another shape, tagged fields, bytes left over, bad UTF-8) returns None, and
the request takes the general path, which answers or rejects it as any other.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import NamedTuple

from kgroups.protocol import apis
from kgroups.protocol.hand_read import (
    Unexpected,
    compact_nullable_string,
    compact_string,
    nullable_string,
    string,
)

_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
_FIRST_FLEXIBLE = 4
_NEWEST = apis.SUPPORTED[apis.HEARTBEAT].max_version
_WITH_INSTANCE_ID = 3


class HeartbeatFields(NamedTuple):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


def read_heartbeat(frame: bytes) -> tuple[int, int, HeartbeatFields] | None:
    """The version, correlation id and fields of a Heartbeat request frame
    (without its size prefix), or None if it is not one this reader takes."""
    if len(frame) < 10:
        return None
    key, version, correlation_id = _HEADER.unpack_from(frame, 0)
    if key != apis.HEARTBEAT or not 0 <= version <= _NEWEST:
        return None
    fields = _read_fields(version, frame[8:])
    return None if fields is None else (version, correlation_id, fields)


# A member sends the same bytes after its correlation id in every heartbeat of
# a generation: reading them once per member and generation is enough.
@lru_cache(maxsize=16384)
def _read_fields(version: int, rest: bytes) -> HeartbeatFields | None:
    """The fields from what follows the correlation id: client id, tags, body."""
    try:
        (client_id_length,) = _INT16.unpack_from(rest, 0)
        if client_id_length < -1:
            return None
        pos = 2 + max(client_id_length, 0)
        if version >= _FIRST_FLEXIBLE:
            if rest[pos] != 0:  # header tagged fields
                return None
            pos += 1
            group_id, pos = compact_string(rest, pos)
            (generation_id,) = _INT32.unpack_from(rest, pos)
            member_id, pos = compact_string(rest, pos + 4)
            instance_id, pos = compact_nullable_string(rest, pos)
            if rest[pos] != 0:  # body tagged fields
                return None
            pos += 1
        else:
            group_id, pos = string(rest, pos)
            (generation_id,) = _INT32.unpack_from(rest, pos)
            member_id, pos = string(rest, pos + 4)
            instance_id = None
            if version >= _WITH_INSTANCE_ID:
                instance_id, pos = nullable_string(rest, pos)
    except (IndexError, struct.error, UnicodeDecodeError, Unexpected):
        return None
    if pos != len(rest):
        return None
    return HeartbeatFields(group_id, generation_id, member_id, instance_id)


def heartbeat_answer(version: int, correlation_id: int, error_code: int) -> bytes:
    """The whole response frame, size prefix included."""
    tail = _answer_tail(version, error_code)
    return _SIZE_AND_CORRELATION.pack(4 + len(tail), correlation_id) + tail


@lru_cache(maxsize=256)
def _answer_tail(version: int, error_code: int) -> bytes:
    """Everything after the correlation id: header tags and the body."""
    body = _INT16.pack(error_code)
    if version >= 1:
        body = _INT32.pack(0) + body  # throttle time
    if version >= _FIRST_FLEXIBLE:
        return b"\x00" + body + b"\x00"  # header tags, body, body tags
    return body
