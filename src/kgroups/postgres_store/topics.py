"""Topics in the cluster store: seen by every broker, ids stable across brokers.

A topic's partitions are created without a leader (leader epoch 0); the next
election gives them one. Partitions and their log are keyed by topic id, so a
topic deleted and created again under the same name starts from an empty log.
"""

from __future__ import annotations

import json
import uuid

from psycopg import errors

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.postgres_store.store import Cur, Store
from kgroups.topics.names import Topic


def create_topic(
    store: Store,
    name: str,
    partitions: int,
    configs: dict[str, str] | None = None,
    *,
    topic_id: uuid.UUID | None = None,
) -> Topic:
    topic = Topic(name, topic_id or uuid.uuid4(), partitions, dict(configs or {}))

    def work(cur: Cur) -> Topic:
        cur.execute(
            "INSERT INTO kgroups_topics (topic_id, name, partitions, configs)"
            " VALUES (%s, %s, %s, %s)",
            (topic.topic_id, name, partitions, json.dumps(topic.configs, sort_keys=True)),
        )
        cur.executemany(
            "INSERT INTO kgroups_partitions (topic_id, partition, leader_epoch,"
            " log_start_offset, next_offset) VALUES (%s, %s, 0, 0, 0)",
            [(topic.topic_id, p) for p in range(partitions)],
        )
        return topic

    try:
        return store.transaction(work)
    except errors.UniqueViolation:
        raise KafkaError(
            ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
        ) from None


def add_partitions(store: Store, name: str, total: int) -> Topic:
    """Grow the topic to ``total`` partitions (CreatePartitions), the new ones
    without a leader; never shrinks. The topic grown."""

    def work(cur: Cur) -> Topic:
        cur.execute(
            "SELECT topic_id, partitions, configs FROM kgroups_topics WHERE name = %s FOR UPDATE",
            (name,),
        )
        row = cur.fetchone()
        if row is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
            )
        topic_id, current = row[0], int(row[1])
        if total <= current:  # another broker grew it meanwhile
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"Topic currently has {current} partitions, which is higher than or equal"
                f" to the requested {total}.",
            )
        cur.execute(
            "UPDATE kgroups_topics SET partitions = %s WHERE topic_id = %s", (total, topic_id)
        )
        cur.executemany(
            "INSERT INTO kgroups_partitions (topic_id, partition, leader_epoch,"
            " log_start_offset, next_offset) VALUES (%s, %s, 0, 0, 0)",
            [(topic_id, p) for p in range(current, total)],
        )
        return Topic(name, topic_id, total, json.loads(row[2]))

    return store.transaction(work)


def set_topic_configs(store: Store, name: str, configs: dict[str, str]) -> Topic:
    """Replace the topic's config overrides (the caller merges, as AlterConfigs);
    the topic as stored now."""

    def work(cur: Cur) -> Topic:
        cur.execute(
            "UPDATE kgroups_topics SET configs = %s WHERE name = %s RETURNING topic_id, partitions",
            (json.dumps(configs, sort_keys=True), name),
        )
        row = cur.fetchone()
        if row is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
            )
        return Topic(name, row[0], int(row[1]), dict(configs))

    return store.transaction(work)


def alter_topic_configs(store: Store, name: str, plan: ConfigPlan) -> tuple[Topic, LogConfig]:
    """Replace the topic's config overrides by what ``plan`` makes of those
    stored, in one transaction, so that a change made meanwhile through
    another broker is not lost; the topic as stored now, and its log config."""

    def work(cur: Cur) -> tuple[Topic, LogConfig]:
        cur.execute(
            "SELECT topic_id, partitions, configs FROM kgroups_topics WHERE name = %s FOR UPDATE",
            (name,),
        )
        row = cur.fetchone()
        if row is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
        configs, config = plan(json.loads(row[2]))
        cur.execute(
            "UPDATE kgroups_topics SET configs = %s WHERE topic_id = %s",
            (json.dumps(configs, sort_keys=True), row[0]),
        )
        return Topic(name, row[0], int(row[1]), dict(configs)), config

    return store.transaction(work)


def delete_topic(store: Store, name: str) -> None:
    """Remove the topic with its partitions and their log."""

    def work(cur: Cur) -> None:
        cur.execute("DELETE FROM kgroups_topics WHERE name = %s", (name,))
        if cur.rowcount != 1:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, name)

    store.transaction(work)


def list_topics(store: Store) -> list[Topic]:
    def work(cur: Cur) -> list[Topic]:
        cur.execute("SELECT name, topic_id, partitions, configs FROM kgroups_topics ORDER BY name")
        return [Topic(r[0], r[1], int(r[2]), json.loads(r[3])) for r in cur.fetchall()]

    return store.transaction(work)
