"""What poll() hands back, and what a commit stores."""

from __future__ import annotations

from typing import NamedTuple

from kgroups.assignors.protocol import TopicPartition
from kgroups.records.batch import Header

__all__ = [
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "TopicPartition",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    """Milliseconds since the epoch, of the kind timestamp_type says."""
    timestamp_type: int
    """CREATE_TIME (set by the producer) or LOG_APPEND_TIME (set by the broker)."""
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class OffsetAndMetadata(NamedTuple):
    offset: int
    """The next offset to read: one past the last record processed."""
    metadata: str = ""
    leader_epoch: int = -1
