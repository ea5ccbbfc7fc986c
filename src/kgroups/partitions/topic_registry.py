"""The topic registry: names, ids, partition counts and per-topic configs.

It is small and changes rarely, so it lives in one JSON file in the log
directory, replaced atomically (write, fsync, rename, fsync the directory) so a
crash leaves either the old or the new registry.

Requests change it with ``add_all`` / ``remove_all`` (and ``grow``, when
CreatePartitions adds partitions; ``set_configs``, when AlterConfigs changes a
topic's configs): one durable write for many topics, done on a worker thread;
the change becomes visible once it is on disk. A name being created, grown,
reconfigured or deleted is *reserved* meanwhile, so no other request can
create, grow or delete it until its partition directories are in place or gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from kgroups.errors import ErrorCode, KafkaError
from kgroups.topics.names import Topic, TopicInfo, validate_topic_name

__all__ = ["REGISTRY_FILE", "Topic", "TopicRegistry"]

REGISTRY_FILE = "kgroups-topics.json"


def _collision_key(name: str) -> str:
    # Kafka's metric names turn '.' into '_', so two such names may not coexist.
    return name.replace(".", "_")


class TopicRegistry:
    def __init__(self, log_dir: Path) -> None:
        self._path = log_dir / REGISTRY_FILE
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        # Names being created or deleted: taken, though not (or no longer) visible.
        self._reserved: set[str] = set()
        # Changes being written: every write includes them, so writes from the
        # loop and from worker threads, in any order, leave every change on disk.
        self._adding: dict[str, Topic] = {}
        self._removing: set[str] = set()
        self._file_lock = threading.Lock()
        self.cluster_id = ""
        # Moves on with every change of the topics (consumer groups compare it).
        self.version = 0
        self._load()

    def _load(self) -> None:
        if not self._path.exists():
            self.cluster_id = _new_cluster_id()
            self._save()
            return
        data = json.loads(self._path.read_text())
        self.cluster_id = data["cluster_id"]
        for t in data["topics"]:
            topic = Topic(t["name"], uuid.UUID(t["id"]), t["partitions"], dict(t["configs"]))
            self._topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic

    def _save(self) -> None:
        """Write the registry with the changes in flight; safe on a worker thread."""
        with self._file_lock:
            # Copies first (each atomic under the GIL): the loop may change these.
            topics, adding, removing = (
                list(self._topics.values()),
                list(self._adding.values()),
                set(self._removing),
            )
            adding_names = {t.name for t in adding}
            # A topic being grown is in both: its new count is the one written.
            kept = [t for t in topics if t.name not in removing and t.name not in adding_names]
            _write_registry(self._path, self.cluster_id, [*kept, *adding])

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def lookup(self, name: str) -> TopicInfo | None:
        """The topic as a consumer group sees it (the TopicsView protocol)."""
        topic = self._topics.get(name)
        return None if topic is None else TopicInfo(topic.topic_id, topic.partitions)

    def names(self) -> list[str]:
        """Every topic's name (the TopicsView protocol)."""
        return list(self._topics)

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self._topics.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._topics

    def partition_exists(self, name: str, partition: int) -> bool:
        topic = self._topics.get(name)
        return topic is not None and 0 <= partition < topic.partitions

    def check_new(self, name: str) -> None:
        validate_topic_name(name)
        if name in self._topics:
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        if name in self._reserved:
            raise KafkaError(
                ErrorCode.topic_already_exists,
                f"Topic '{name}' is being created or marked for deletion.",
            )
        key = _collision_key(name)
        for other in (*self._topics, *self._reserved):
            if _collision_key(other) == key:
                raise KafkaError(
                    ErrorCode.invalid_topic_exception,
                    f"Topic '{name}' collides with existing topic '{other}'",
                )

    def add(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        self.check_new(name)
        topic = Topic(name, uuid.uuid4(), partitions, dict(configs))
        self._topics[name] = topic
        self._by_id[topic.topic_id] = topic
        self.version += 1
        self._save()
        return topic

    # -- cluster mode: a copy of the topics kept in the cluster store -------------

    def mirror(self, topics: Iterable[Topic]) -> list[str]:
        """Become the store's topics (nothing is written here); returns the
        names of the topics that are gone."""
        fresh = {t.name: t for t in topics}
        gone = [
            name
            for name, t in self._topics.items()
            if name not in fresh or fresh[name].topic_id != t.topic_id
        ]
        self._topics = fresh
        self._by_id = {t.topic_id: t for t in fresh.values()}
        self.version += 1
        return gone

    def mirror_add(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.version += 1

    # -- batched changes, written off the event loop ----------------------------

    def reserve(self, name: str) -> None:
        """Take ``name`` while its partitions are created or removed."""
        self._reserved.add(name)

    def release(self, name: str) -> None:
        self._reserved.discard(name)

    def is_reserved(self, name: str) -> bool:
        return name in self._reserved

    async def add_all(self, topics: Iterable[Topic]) -> None:
        """Register new topics (already checked and reserved) with one durable write."""
        new = list(topics)
        for topic in new:
            self._adding[topic.name] = topic
        try:
            await asyncio.to_thread(self._save)
        finally:
            for topic in new:
                del self._adding[topic.name]
        for topic in new:
            self._topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        self.version += 1

    async def grow(self, topic: Topic, partitions: int) -> Topic:
        """Register more partitions of ``topic`` (created already) with one
        durable write; the topic as registered now."""
        return await self._replace(Topic(topic.name, topic.topic_id, partitions, topic.configs))

    async def set_configs(self, topic: Topic, configs: dict[str, str]) -> Topic:
        """Replace the topic's config overrides (AlterConfigs) with one durable
        write; the topic as registered now."""
        return await self._replace(Topic(topic.name, topic.topic_id, topic.partitions, configs))

    async def _replace(self, topic: Topic) -> Topic:
        changed = Topic(topic.name, topic.topic_id, topic.partitions, dict(topic.configs))
        self._adding[topic.name] = changed
        try:
            await asyncio.to_thread(self._save)
        finally:
            del self._adding[topic.name]
        self.mirror_add(changed)
        return changed

    async def remove_all(self, names: Iterable[str]) -> None:
        """Unregister topics with one durable write."""
        doomed = set(names) - self._removing
        self._removing |= doomed
        try:
            await asyncio.to_thread(self._save)
        finally:
            self._removing -= doomed
        for name in doomed:
            topic = self._topics.pop(name, None)
            if topic is not None:
                del self._by_id[topic.topic_id]
        self.version += 1


def _write_registry(path: Path, cluster_id: str, topics: list[Topic]) -> None:
    data = {
        "cluster_id": cluster_id,
        "topics": [
            {
                "name": t.name,
                "id": str(t.topic_id),
                "partitions": t.partitions,
                "configs": t.configs,
            }
            for t in topics
        ],
    }
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _new_cluster_id() -> str:
    # Kafka's cluster ids are 16 random bytes in URL-safe base64 without padding.
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
