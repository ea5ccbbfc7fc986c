"""The store transactions of a cluster member besides its lease and the
election: creating topics and adding partitions (each followed by an
election, so the new partitions get leaders at once), and the cluster id."""

from __future__ import annotations

import base64
import uuid

from kgroups.cluster.leadership import elect_leaders
from kgroups.errors import KafkaError
from kgroups.postgres_store.store import Cur, Store
from kgroups.postgres_store.topics import add_partitions, create_topic
from kgroups.topics.names import Topic

__all__ = ["create_all", "grow_topic", "read_cluster_id"]


def create_all(store: Store, topics: list[Topic]) -> dict[str, KafkaError]:
    failed = {}
    for topic in topics:
        try:
            create_topic(
                store, topic.name, topic.partitions, topic.configs, topic_id=topic.topic_id
            )
        except KafkaError as e:
            failed[topic.name] = e
    elect_leaders(store)
    return failed


def read_cluster_id(store: Store) -> str:
    """One id for every broker of the cluster: derived from the database."""

    def work(cur: Cur) -> str:
        cur.execute("SELECT current_database(), system_identifier FROM pg_control_system()")
        row = cur.fetchone()
        assert row is not None
        return f"{row[0]}/{row[1]}"

    raw = uuid.uuid5(uuid.NAMESPACE_URL, "kgroups:" + store.transaction(work)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def grow_topic(store: Store, name: str, count: int) -> Topic:
    """Add partitions to the topic up to ``count`` (CreatePartitions), then elect."""
    topic = add_partitions(store, name, count)
    elect_leaders(store)
    return topic
