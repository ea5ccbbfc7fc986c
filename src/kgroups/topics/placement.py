"""Which `__consumer_offsets` partition coordinates a group, and which
`__share_group_state` partition keeps a share partition's state.

Kafka uses `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`. Both
halves are Java's, so both are reproduced: String.hashCode runs over UTF-16 code
units with 32-bit wrap-around, and Kafka's `Utils.abs` maps Integer.MIN_VALUE to
0 (where Math.abs would return it unchanged, negative).
"""

from __future__ import annotations

import base64
import uuid
from functools import lru_cache

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})


def java_string_hash(s: str) -> int:
    h = 0
    for unit in _utf16_units(s):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def kafka_abs(n: int) -> int:
    return 0 if n == -0x8000_0000 else abs(n)


@lru_cache(maxsize=65536)
def partition_for_group(group_id: str, partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % partitions


def partition_for_share_key(
    group_id: str, topic_id: uuid.UUID, partition: int, partitions: int
) -> int:
    """Kafka's SharePartitionKey: ``group:topicId:partition`` (the topic id in
    Kafka's base64 form), hashed as a group id is."""
    kafka_id = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    return kafka_abs(java_string_hash(f"{group_id}:{kafka_id}:{partition}")) % partitions


def _utf16_units(s: str) -> list[int]:
    data = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
