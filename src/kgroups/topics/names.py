"""Topics as every part of kgroups names them: legal names, and what a topic is.

Kafka's rules: at most 249 characters of ASCII letters, digits, '.', '_' and
'-', and neither "." nor "..". The client checks names with the same rules the
broker enforces.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

from kgroups.errors import ErrorCode, KafkaError
from kgroups.topics.placement import INTERNAL_TOPICS

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_PARTITIONS_PER_TOPIC",
    "Topic",
    "TopicInfo",
    "is_legal_topic_name",
    "validate_topic_name",
]

MAX_NAME_LENGTH = 249
# A bound Kafka does not have: one request (CreateTopics, CreatePartitions) must
# not be able to make a broker create millions of partition directories.
MAX_PARTITIONS_PER_TOPIC = 10_000
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_topic_name(name: str) -> None:
    if not name:
        raise KafkaError(ErrorCode.invalid_topic_exception, "Topic name is empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.invalid_topic_exception, f"Topic name {name!r} is illegal")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"Topic name is longer than {MAX_NAME_LENGTH} characters",
        )
    if not _LEGAL.fullmatch(name):
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"Topic name {name!r} has characters other than ASCII letters, digits, '.', '_', '-'",
        )


def is_legal_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What a consumer group needs to know of a topic."""

    topic_id: uuid.UUID
    partitions: int
