"""A Produce request read in place: its records stay where they are in the frame.

kio's reader copies every partition's records out of the frame into bytes of
their own, which the log then copies again to stamp offsets into. Read here,
each partition's records are a writable view of the frame (a bytearray the
connection read the request into, network/request_stream.py), and the log
stamps offsets into them where they lie (partitions/stamping.py).

Only the plain case is read here: any null where the schema allows none, a
tagged field, a string that is not UTF-8, or a length past the frame's end
answers None, and the request goes to kio's reader (after the length check
of protocol/bounds.py), which refuses it as it always has. The result is the
newest schema's ProduceRequest (v9), which every version from v3 maps onto
field for field.
"""

from __future__ import annotations

import struct
from datetime import timedelta
from typing import cast

from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.schema.types import TransactionalId
from kio.static.primitive import Records, i16, i32, i32Timedelta

from kgroups.protocol.types import TopicName

__all__ = ["read_produce_in_place"]

_FIRST_FLEXIBLE = 9
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


class _Unusual(Exception):
    """Something kio's reader should look at (and probably refuse)."""


def read_produce_in_place(frame: bytearray, pos: int, version: int) -> ProduceRequest | None:
    """The Produce request of ``version`` whose body starts at ``pos`` in
    ``frame``, its records views of ``frame``; None if kio's reader must read it."""
    view = memoryview(frame)
    end = len(frame)
    try:
        if version >= _FIRST_FLEXIBLE:
            return _flexible(frame, view, pos, end)
        return _legacy(frame, view, pos, end)
    except (_Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None


def _flexible(frame: bytearray, view: memoryview, pos: int, end: int) -> ProduceRequest:
    n, pos = _uvarint(frame, pos)
    transactional_id = None
    if n:
        pos, transactional_id = pos + n - 1, _text(frame, pos, pos + n - 1, end)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    pos += 6
    count, pos = _array_length(frame, pos, end)
    topics = []
    for _ in range(count):
        n, pos = _uvarint(frame, pos)
        if not n:
            raise _Unusual
        name = _text(frame, pos, pos + n - 1, end)
        pos += n - 1
        partition_count, pos = _array_length(frame, pos, end)
        partitions = []
        for _ in range(partition_count):
            (index,) = _INT32.unpack_from(frame, pos)
            n, pos = _uvarint(frame, pos + 4)
            records = None
            if n:
                if pos + n - 1 > end:
                    raise _Unusual
                records = view[pos : pos + n - 1]
                pos += n - 1
            pos = _no_tags(frame, pos)
            partitions.append(
                PartitionProduceData(index=cast(i32, index), records=cast(Records, records))
            )
        pos = _no_tags(frame, pos)
        topics.append(TopicProduceData(name=TopicName(name), partition_data=tuple(partitions)))
    _no_tags(frame, pos)
    return _request(transactional_id, acks, timeout_ms, topics)


def _legacy(frame: bytearray, view: memoryview, pos: int, end: int) -> ProduceRequest:
    (n,) = _INT16.unpack_from(frame, pos)
    pos += 2
    transactional_id = None
    if n >= 0:
        pos, transactional_id = pos + n, _text(frame, pos, pos + n, end)
    elif n != -1:
        raise _Unusual
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, pos)
    pos += 6
    (count,) = _INT32.unpack_from(frame, pos)
    pos += 4
    if not 0 <= count <= end - pos:
        raise _Unusual
    topics = []
    for _ in range(count):
        (n,) = _INT16.unpack_from(frame, pos)
        pos += 2
        if n < 0:
            raise _Unusual
        name = _text(frame, pos, pos + n, end)
        pos += n
        (partition_count,) = _INT32.unpack_from(frame, pos)
        pos += 4
        if not 0 <= partition_count <= end - pos:
            raise _Unusual
        partitions = []
        for _ in range(partition_count):
            index, n = _INT32.unpack_from(frame, pos)[0], _INT32.unpack_from(frame, pos + 4)[0]
            pos += 8
            records = None
            if n >= 0:
                if pos + n > end:
                    raise _Unusual
                records = view[pos : pos + n]
                pos += n
            elif n != -1:
                raise _Unusual
            partitions.append(
                PartitionProduceData(index=cast(i32, index), records=cast(Records, records))
            )
        topics.append(TopicProduceData(name=TopicName(name), partition_data=tuple(partitions)))
    return _request(transactional_id, acks, timeout_ms, topics)


def _request(
    transactional_id: str | None, acks: int, timeout_ms: int, topics: list[TopicProduceData]
) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=cast(TransactionalId | None, transactional_id),
        acks=cast(i16, acks),
        timeout=cast(i32Timedelta, timedelta(milliseconds=timeout_ms)),
        topic_data=tuple(topics),
    )


def _text(frame: bytearray, start: int, stop: int, end: int) -> str:
    if stop > end:
        raise _Unusual
    return frame[start:stop].decode()


def _array_length(frame: bytearray, pos: int, end: int) -> tuple[int, int]:
    n, pos = _uvarint(frame, pos)
    if not n or n - 1 > end - pos:
        raise _Unusual  # null, or more elements than bytes left
    return n - 1, pos


def _no_tags(frame: bytearray, pos: int) -> int:
    if frame[pos]:
        raise _Unusual
    return pos + 1


def _uvarint(frame: bytearray, pos: int) -> tuple[int, int]:
    b = frame[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = frame[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + 1
        shift += 7
        if shift >= 35:
            raise _Unusual
