"""The user data of the eager "sticky" assignor: what the member owned.

Under the eager protocol a member gives up everything before rejoining, so the
sticky assignor carries its last assignment, and the generation it got it in,
in the subscription's user data. The Java client and kafka-python write it as
StickyAssignorUserData v1:

    previous_assignment: [topic: string, partitions: [int32]]
    generation: int32                                   (v1 only)

big-endian, int16-length strings, int32-count arrays, with no version in
front: v0 lacks the generation. Readers try v1 and fall back to v0; data
neither can read is ignored. kafka-python 3 writes an int16 version before the
struct (and so cannot read the Java client's data); this reader takes both.

A group of 2,000 members with a million partitions sends a million
(topic, partitions) entries, so reading leaves the partition arrays in the
bytes until the assignor asks for them by number.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgroups.assignors.protocol import TopicPartition

__all__ = ["StickyUserData", "encode_sticky_user_data", "read_sticky_user_data"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@dataclass(slots=True)
class StickyUserData:
    data: bytes
    entries: list[tuple[bytes, int, int]]
    """(topic name as UTF-8, where its partitions start in ``data``, how many)."""
    generation: int | None
    """None for v0 data, which does not say."""

    def partitions(self) -> list[TopicPartition]:
        return [
            TopicPartition(name.decode(), partition)
            for name, start, count in self.entries
            for partition in struct.unpack_from(f">{count}i", self.data, start)
        ]

    def numbered(self, first_numbers: Mapping[bytes, tuple[int, int]]) -> list[int]:
        """The numbers of the partitions, given (first number, partition count)
        for each known topic by UTF-8 name; others are left out."""
        data, known, read_int32 = self.data, first_numbers.get, _INT32.unpack_from
        numbers: list[int] = []
        for name, start, count in self.entries:
            topic = known(name)
            if topic is None:
                continue
            first, limit = topic
            if count == 1:  # the common case: assignments spread over topics
                (partition,) = read_int32(data, start)
                if 0 <= partition < limit:
                    numbers.append(first + partition)
            else:
                partitions = struct.unpack_from(f">{count}i", data, start)
                numbers.extend(first + p for p in partitions if 0 <= p < limit)
        return numbers


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    chunks = [_INT32.pack(len(by_topic))]
    for topic, numbers in by_topic.items():
        name = topic.encode()
        chunks.append(_INT16.pack(len(name)) + name)
        chunks.append(struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))
    chunks.append(_INT32.pack(generation))
    return b"".join(chunks)


def read_sticky_user_data(data: bytes) -> StickyUserData | None:
    """None when the data is neither version (the member's past is then unknown)."""
    java = _read_entries(data, 0)
    if java is not None:
        entries, end = java
        if end + _INT32.size == len(data):
            return StickyUserData(data, entries, _INT32.unpack_from(data, end)[0])
        if end == len(data):
            return StickyUserData(data, entries, None)
    # kafka-python 3 puts an int16 version in front, which the Java client does
    # not; such data rarely reads as Java's, and never exactly to its end.
    if data[:2] in (b"\x00\x00", b"\x00\x01"):
        prefixed = _read_entries(data, _INT16.size)
        if prefixed is not None:
            entries, end = prefixed
            if data[1] == 1 and end + _INT32.size == len(data):
                return StickyUserData(data, entries, _INT32.unpack_from(data, end)[0])
            if data[1] == 0 and end == len(data):
                return StickyUserData(data, entries, None)
    if java is not None:
        # Like the Java client, ignore whatever follows.
        entries, end = java
        generation = _INT32.unpack_from(data, end)[0] if end + _INT32.size <= len(data) else None
        return StickyUserData(data, entries, generation)
    return None


def _read_entries(data: bytes, offset: int) -> tuple[list[tuple[bytes, int, int]], int] | None:
    """The previous_assignment array starting at ``offset``, and where it ends."""
    read_int16, read_int32, size = _INT16.unpack_from, _INT32.unpack_from, len(data)
    try:
        (topics,) = read_int32(data, offset)
        if topics < 0:
            return None
        offset += 4
        entries = []
        for _ in range(topics):
            (length,) = read_int16(data, offset)
            offset += 2
            name = data[offset : offset + length]
            offset += length
            (count,) = read_int32(data, offset)
            offset += 4
            if length < 0 or count < 0 or offset + 4 * count > size:
                return None
            entries.append((name, offset, count))
            offset += 4 * count
    except struct.error:
        return None
    return entries, offset
