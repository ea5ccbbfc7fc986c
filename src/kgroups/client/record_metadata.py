"""What a delivered record's future resolves to."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["RecordMetadata"]


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    """-1 when unknown: acks=0, or a retried batch the broker had already stored."""
    timestamp: int
    """The record's timestamp, or the broker's append time for LogAppendTime topics."""
    serialized_key_size: int
    serialized_value_size: int
