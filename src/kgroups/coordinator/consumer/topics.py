"""What a consumer group needs to know of the cluster's topics."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kgroups.topics.names import TopicInfo


class TopicsView(Protocol):
    """The broker's topics as the coordinator sees them now."""

    @property
    def version(self) -> int:
        """Changes whenever a topic is created, deleted or gets partitions, so a
        heartbeat can tell in O(1) that nothing changed."""
        ...

    def lookup(self, name: str) -> TopicInfo | None: ...

    def names(self) -> Iterable[str]:
        """Every topic's name (regular-expression subscriptions scan them)."""
        ...


@dataclass(slots=True)
class TopicImage:
    """A TopicsView over a plain mapping, for tests and for the shard to fill."""

    topics: dict[str, TopicInfo] = field(default_factory=dict)
    version: int = 0

    def lookup(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def names(self) -> Iterable[str]:
        return self.topics.keys()

    def put(self, name: str, partitions: int, topic_id: uuid.UUID | None = None) -> TopicInfo:
        old = self.topics.get(name)
        if topic_id is None:
            topic_id = old.topic_id if old is not None else uuid.uuid4()
        info = TopicInfo(topic_id, partitions)
        self.topics[name] = info
        self.version += 1
        return info

    def delete(self, name: str) -> None:
        del self.topics[name]
        self.version += 1


def metadata_hash(names: Iterable[str], topics: TopicsView) -> int:
    """A hash of the subscribed topics' ids and partition counts (0: none
    exists). It is this project's own hash, stored where Kafka 4.1 stores its
    metadata hash: only this coordinator compares it."""
    digest = hashlib.blake2b(digest_size=8)
    found = False
    for name in sorted(names):
        info = topics.lookup(name)
        if info is None:
            continue
        found = True
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(info.topic_id.bytes)
        digest.update(info.partitions.to_bytes(4, "big"))
    if not found:
        return 0
    value = int.from_bytes(digest.digest(), "big", signed=True)
    return value or 1


def resolve(names: Iterable[str], topics: TopicsView) -> Mapping[str, TopicInfo]:
    found = {}
    for name in names:
        info = topics.lookup(name)
        if info is not None:
            found[name] = info
    return found
