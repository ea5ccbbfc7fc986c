"""ConsumerGroupHeartbeat requests of a member with nothing to say, read and
answered by hand.

Once its assignment is reconciled, a KIP-848 member heartbeats with its group
id, member id and epoch, every other field null or -1. Reading those three
fields with a few struct calls and answering from bytes built once per
(version, member id) costs a fraction of decoding into a kio object and
encoding one back. Any other frame (another field set, tagged fields, bytes
left over, bad UTF-8) returns None and takes the general path.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import NamedTuple

from kgroups.protocol import apis
from kgroups.protocol.hand_read import (
    Unexpected,
    compact_string,
)

_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
_EPOCH_AND_INTERVAL = struct.Struct(">ii")
_NEWEST = apis.SUPPORTED[apis.CONSUMER_GROUP_HEARTBEAT].max_version
_WITH_REGEX = 1

# What follows the member epoch when nothing changed: null instance and rack
# ids, rebalance timeout -1, null topic names, (from v1) null regex, null
# assignor, null owned partitions, no tagged fields.
_UNCHANGED_TAIL = {
    version: b"\x00\x00\xff\xff\xff\xff\x00"
    + (b"\x00" if version >= _WITH_REGEX else b"")
    + b"\x00\x00\x00"
    for version in range(_NEWEST + 1)
}


class UnchangedHeartbeat(NamedTuple):
    client_id: str
    group_id: str
    member_id: str
    member_epoch: int


def read_unchanged_heartbeat(frame: bytes) -> tuple[int, int, UnchangedHeartbeat] | None:
    """The version, correlation id and fields of a ConsumerGroupHeartbeat
    request frame (without its size prefix) that carries nothing but its
    group id, member id and epoch; None for any other frame."""
    if len(frame) < 10:
        return None
    key, version, correlation_id = _HEADER.unpack_from(frame, 0)
    if key != apis.CONSUMER_GROUP_HEARTBEAT or not 0 <= version <= _NEWEST:
        return None
    fields = _read_fields(version, frame[8:])
    return None if fields is None else (version, correlation_id, fields)


# A member sends the same bytes after its correlation id in every heartbeat of
# an epoch: reading them once per member and epoch is enough.
@lru_cache(maxsize=16384)
def _read_fields(version: int, rest: bytes) -> UnchangedHeartbeat | None:
    """The fields from what follows the correlation id: client id, tags, body."""
    tail = _UNCHANGED_TAIL[version]
    if not rest.endswith(tail):
        return None
    try:
        (client_id_length,) = _INT16.unpack_from(rest, 0)
        if client_id_length < -1:
            return None
        pos = 2 + max(client_id_length, 0)
        client_id = rest[2:pos].decode()
        if rest[pos] != 0:  # header tagged fields
            return None
        group_id, pos = compact_string(rest, pos + 1)
        member_id, pos = compact_string(rest, pos)
        (member_epoch,) = _INT32.unpack_from(rest, pos)
    except (IndexError, struct.error, UnicodeDecodeError, Unexpected):
        return None
    if pos + 4 + len(tail) != len(rest):
        return None
    return UnchangedHeartbeat(client_id, group_id, member_id, member_epoch)


def unchanged_answer(
    version: int, correlation_id: int, member_id: str, member_epoch: int, interval_ms: int
) -> bytes:
    """The whole response frame, size prefix included: no error, the member's
    id and epoch, the heartbeat interval, no assignment."""
    head, end = _answer_parts(version, member_id)
    return b"".join(
        (
            _SIZE_AND_CORRELATION.pack(4 + len(head) + 8 + len(end), correlation_id),
            head,
            _EPOCH_AND_INTERVAL.pack(member_epoch, interval_ms),
            end,
        )
    )


@lru_cache(maxsize=16384)
def _answer_parts(version: int, member_id: str) -> tuple[bytes, bytes]:
    """What comes before the member epoch after the correlation id (header
    tags, throttle time, error code, null message, member id) and what comes
    after the heartbeat interval (null assignment, body tags). The same in
    v0 and v1."""
    encoded = member_id.encode()
    head = b"\x00" + _INT32.pack(0) + _INT16.pack(0) + b"\x00" + _varint(len(encoded) + 1) + encoded
    return head, b"\xff\x00"


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
