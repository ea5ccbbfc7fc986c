"""Decode the "consumer" protocol's assignment bytes (versions 0-3)."""

from __future__ import annotations

import struct
from functools import cache
from typing import Any

from kio.index import load_entity_schema
from kio.static.constants import EntityType

from kgroups.protocol.bounds import bounded_reader


@cache
def _assignment_reader(version: int) -> Any:
    return bounded_reader(
        load_entity_schema("consumer_protocol_assignment", version, EntityType.data)
    )


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a member's assignment.

    Newer versions than we know are read with the newest reader: Kafka's rule
    is that versions only add fields at the end.
    """
    (version,) = struct.unpack_from(">h", data)
    assignment, _ = _assignment_reader(min(max(version, 0), 3))(data, 2)
    return [(t.topic, p) for t in assignment.assigned_partitions for p in t.partitions]
