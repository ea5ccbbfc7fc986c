"""What a share consumer's poll() hands back: a record with its delivery count
(Kafka's ConsumerRecord.deliveryCount()), and what may become of it."""

from __future__ import annotations

import enum
from typing import NamedTuple

from kgroups.client.consumer_record import ConsumerRecord, TopicPartition
from kgroups.records.batch import Header

__all__ = ["AcknowledgeType", "ShareConsumerRecord"]


class AcknowledgeType(enum.IntEnum):
    """Kafka's AcknowledgeType, with its wire values."""

    ACCEPT = 1
    """Processed: never delivered again."""
    RELEASE = 2
    """Not processed: delivered again (to this member or another)."""
    REJECT = 3
    """Cannot be processed: archived, never delivered again."""
    RENEW = 4
    """Still being processed: its acquisition lock starts again (KIP-1222)."""


GAP = 0
"""The acknowledgement of an acquired offset that holds no record (compacted away)."""


class ShareConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    delivery_count: int
    """How many times the record has been acquired, this time included."""

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @classmethod
    def of(cls, record: ConsumerRecord, delivery_count: int) -> ShareConsumerRecord:
        return cls(*record, delivery_count)
