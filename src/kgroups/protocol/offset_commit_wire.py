"""OffsetCommit requests read by hand.

A committing consumer sends an OffsetCommit every few seconds per group, and
a busy coordinator reads many: decoding each into kio entities costs more
than the few struct calls that read its fields here. Versions 2 to 9 are
read (every version the broker serves): v2-v4 as kafka-python and aiokafka
send them, v7 and v8 as librdkafka does, v9 as a KIP-848 consumer does. The
fields come out in the attribute names of kio's newest request, so the
coordinator takes either.

Anything this reader does not expect returns None, and the request takes the
general path, which answers or rejects it as any other: a frame of another
shape, tagged fields, bytes left over, bad UTF-8, a null where the schema
has none, an explicit retention time (v2-v4), strings or arrays longer than
one varint byte announces in a flexible version.
"""

from __future__ import annotations

import functools
import struct
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
_INT64 = struct.Struct(">q")
# Partition index, committed offset (v2-v5).
_OFFSET = struct.Struct(">iq")
# Partition index, committed offset, committed leader epoch (v6 on).
_OFFSET_EPOCH = struct.Struct(">iqi")
# The same, then (skipped) an empty compact metadata and no tagged fields (v8 on).
_EMPTY_METADATA_PARTITION = struct.Struct(">iqi2x")
_NEWEST = apis.SUPPORTED[apis.OFFSET_COMMIT].max_version
_OLDEST = apis.SUPPORTED[apis.OFFSET_COMMIT].min_version
_LAST_WITH_RETENTION = 4
_FIRST_WITH_LEADER_EPOCH = 6
_FIRST_WITH_INSTANCE_ID = 7
_FIRST_FLEXIBLE = 8
_NO_RETENTION = -1
NO_LEADER_EPOCH = -1


class WirePartition(NamedTuple):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None


class BarePartition(NamedTuple):
    """A partition committed with empty metadata, as nearly every one is:
    made straight from the three numbers unpacked."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int

    @property
    def committed_metadata(self) -> str:
        return ""


class WireTopic(NamedTuple):
    name: str
    partitions: tuple[WirePartition | BarePartition, ...]


class WireCommit(NamedTuple):
    """An OffsetCommit request as the newest version holds it (v9)."""

    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    topics: tuple[WireTopic, ...]


class WireCommitRequest(NamedTuple):
    version: int
    correlation_id: int
    client_id: str
    commit: WireCommit


_new = tuple.__new__
_bare = functools.partial(_new, BarePartition)


def read_offset_commit(frame: bytes) -> WireCommitRequest | None:
    """The request of an OffsetCommit frame (without its size prefix), or
    None if it is not one this reader takes."""
    if len(frame) < 10:
        return None
    key, version, correlation_id = _HEADER.unpack_from(frame, 0)
    if key != apis.OFFSET_COMMIT or not _OLDEST <= version <= _NEWEST:
        return None
    try:
        if version >= _FIRST_FLEXIBLE:
            read = _read_flexible(frame, version)
        else:
            read = _read_fixed(frame, version)
    except (IndexError, struct.error, UnicodeDecodeError, Unexpected):
        return None
    if read is None:
        return None
    client_id, commit = read
    return WireCommitRequest(version, correlation_id, client_id, commit)


def _read_fixed(frame: bytes, version: int) -> tuple[str, WireCommit] | None:
    """Versions 2 to 7: request header v1, int16-length strings, int32 arrays."""
    client_id, pos = nullable_string(frame, 8)
    group_id, pos = string(frame, pos)
    (generation,) = _INT32.unpack_from(frame, pos)
    member_id, pos = string(frame, pos + 4)
    instance_id = None
    if version >= _FIRST_WITH_INSTANCE_ID:
        instance_id, pos = nullable_string(frame, pos)
    if version <= _LAST_WITH_RETENTION:
        (retention,) = _INT64.unpack_from(frame, pos)
        if retention != _NO_RETENTION:
            return None
        pos += 8
    with_epoch = version >= _FIRST_WITH_LEADER_EPOCH
    (topic_count,) = _INT32.unpack_from(frame, pos)
    pos += 4
    if not 0 <= topic_count <= len(frame) - pos:
        return None
    topics = []
    for _ in range(topic_count):
        name, pos = string(frame, pos)
        (count,) = _INT32.unpack_from(frame, pos)
        pos += 4
        if not 0 <= count <= len(frame) - pos:
            return None
        partitions = []
        for _ in range(count):
            if with_epoch:
                index, offset, epoch = _OFFSET_EPOCH.unpack_from(frame, pos)
                pos += 16
            else:
                index, offset = _OFFSET.unpack_from(frame, pos)
                epoch = NO_LEADER_EPOCH
                pos += 12
            metadata, pos = nullable_string(frame, pos)
            partitions.append(_new(WirePartition, (index, offset, epoch, metadata)))
        topics.append(_new(WireTopic, (name, tuple(partitions))))
    if pos != len(frame):
        return None
    commit = _new(WireCommit, (group_id, generation, member_id, instance_id, tuple(topics)))
    return client_id or "", commit


def _read_flexible(frame: bytes, version: int) -> tuple[str, WireCommit] | None:
    """Versions 8 and 9: request header v2, compact strings and arrays,
    tagged fields (which must be empty)."""
    client_id, pos = nullable_string(frame, 8)  # the header's client id stays int16
    if frame[pos] != 0:  # header tagged fields
        return None
    group_id, pos = compact_string(frame, pos + 1)
    (generation,) = _INT32.unpack_from(frame, pos)
    member_id, pos = compact_string(frame, pos + 4)
    instance_id, pos = compact_nullable_string(frame, pos)
    topic_count = frame[pos] - 1
    pos += 1
    if not 0 <= topic_count < 0x7F:
        return None
    topics = []
    unpack = _OFFSET_EPOCH.unpack_from
    unpack_all = _EMPTY_METADATA_PARTITION.iter_unpack
    for _ in range(topic_count):
        name, pos = compact_string(frame, pos)
        count = frame[pos] - 1
        pos += 1
        if not 0 <= count < 0x7F:
            return None
        end = pos + 18 * count
        block = frame[pos:end]
        # The usual partition, 18 bytes: index, offset, leader epoch, empty
        # metadata (length byte 1), no tagged fields (0); all read at once.
        if block[16::18] == b"\x01" * count and block[17::18] == bytes(count):
            topics.append(_new(WireTopic, (name, tuple(map(_bare, unpack_all(block))))))
            pos = end
            if frame[pos] != 0:  # topic tagged fields
                return None
            pos += 1
            continue
        partitions = []
        for _ in range(count):
            index, offset, epoch = unpack(frame, pos)
            length = frame[pos + 16] - 1
            pos += 17
            if length <= 0:  # empty (nearly every commit) or null
                metadata: str | None = "" if length == 0 else None
            elif length < 0x7F:
                end = pos + length
                if end > len(frame):
                    return None
                metadata = frame[pos:end].decode()
                pos = end
            else:
                return None
            if frame[pos] != 0:  # partition tagged fields
                return None
            pos += 1
            partitions.append(_new(WirePartition, (index, offset, epoch, metadata)))
        if frame[pos] != 0:  # topic tagged fields
            return None
        pos += 1
        topics.append(_new(WireTopic, (name, tuple(partitions))))
    if frame[pos] != 0 or pos + 1 != len(frame):  # body tagged fields, then the end
        return None
    commit = _new(WireCommit, (group_id, generation, member_id, instance_id, tuple(topics)))
    return client_id or "", commit
