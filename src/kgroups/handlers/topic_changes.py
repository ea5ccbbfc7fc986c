"""Creating and deleting topics for requests, without blocking the event loop.

Making or removing thousands of partition directories is seconds of file system
calls, so that work runs on a worker thread, and all the topics of one request
are registered (or unregistered) with a single durable registry write. Names
are reserved in the registry meanwhile (see ``partitions/topic_registry.py``).

Creation is all or nothing per topic: its partitions are created first, then
the registry write makes the topic exist. A failure (EMFILE, a full disk)
removes the partitions made so far and answers KAFKA_STORAGE_ERROR for that
topic. Deletion writes the registry first (the commit point), then closes the
logs on the loop and removes their directories off it. A crash between the two
steps leaves directories of an unregistered topic, which the next start sets
aside as strays (``storage/log_manager.py``).

Both run in a task of their own, shielded from the request's cancellation, so
the registry and the log manager always agree.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.log import SegmentLog
from kgroups.topics.names import Topic

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["NewTopic", "create_topics", "delete_topics"]

log = logging.getLogger(__name__)

_NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    partitions: int | None  # None: num.partitions
    configs: dict[str, str]


async def create_topics(
    broker: BrokerApi, wanted: Sequence[NewTopic], *, validate_only: bool = False
) -> list[Topic | KafkaError]:
    """Create ``wanted``; one result per entry, in order."""
    results: list[Topic | KafkaError] = []
    planned: list[tuple[Topic, LogConfig]] = []
    for new in wanted:
        try:
            topic, config = broker.plan_topic(new.name, new.partitions, new.configs)
        except KafkaError as e:
            results.append(e)
            continue
        if validate_only:
            results.append(Topic(topic.name, _NO_TOPIC_ID, topic.partitions, topic.configs))
            continue
        results.append(topic)
        broker.topics.reserve(topic.name)
        planned.append((topic, config))
    if planned:
        create = _create if broker.cluster is None else _create_in_store
        failed = await asyncio.shield(asyncio.ensure_future(create(broker, planned)))
        results = [failed.get(r.name, r) if isinstance(r, Topic) else r for r in results]
    return results


async def _create(
    broker: BrokerApi, planned: list[tuple[Topic, LogConfig]]
) -> dict[str, KafkaError]:
    failed: dict[str, KafkaError] = {}
    made: list[tuple[Topic, list[SegmentLog]]] = []
    try:
        now = broker.clock.now_ms()
        for topic, config in planned:
            try:
                logs = await asyncio.to_thread(
                    broker.logs.create_partitions, topic.name, topic.partitions, config, now
                )
            except (OSError, KafkaError) as e:
                failed[topic.name] = _storage_error(f"creating topic {topic.name}", e)
                continue
            made.append((topic, logs))
        if not made:
            return failed
        try:
            await broker.topics.add_all(topic for topic, _logs in made)
        except OSError as e:
            error = _storage_error("writing the topic registry", e)
            for topic, logs in made:
                failed[topic.name] = error
                await asyncio.to_thread(_discard, logs)
            return failed
        for topic, logs in made:
            broker.logs.adopt(topic.name, logs)
            log.info("created topic %s with %d partition(s)", topic.name, topic.partitions)
        return failed
    finally:
        for topic, _config in planned:
            broker.topics.release(topic.name)


async def _create_in_store(
    broker: BrokerApi, planned: list[tuple[Topic, LogConfig]]
) -> dict[str, KafkaError]:
    """Cluster mode: the topics are rows in the store, seen by every broker."""
    assert broker.cluster is not None
    try:
        failed = await broker.cluster.create_topics([topic for topic, _config in planned])
    except KafkaError as e:
        failed = {
            topic.name: _storage_error("creating topics in the cluster store", e)
            for topic, _config in planned
        }
    finally:
        for topic, _config in planned:
            broker.topics.release(topic.name)
    for topic, _config in planned:
        if topic.name not in failed:
            log.info("created topic %s with %d partition(s)", topic.name, topic.partitions)
    return failed


def _discard(logs: Sequence[SegmentLog]) -> None:
    for partition_log in logs:
        partition_log.delete()


async def delete_topics(broker: BrokerApi, names: Sequence[str]) -> list[Topic | KafkaError]:
    """Delete the topics named; one result per name, in order."""
    results: list[Topic | KafkaError] = []
    doomed: list[Topic] = []
    for name in names:
        try:
            topic = broker.deletable_topic(name)
            if any(t.name == name for t in doomed):
                raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Unknown topic {name}")
        except KafkaError as e:
            results.append(e)
            continue
        results.append(topic)
        broker.topics.reserve(name)
        doomed.append(topic)
    if doomed:
        delete = _delete if broker.cluster is None else _delete_in_store
        failed = await asyncio.shield(asyncio.ensure_future(delete(broker, doomed)))
        results = [failed.get(r.name, r) if isinstance(r, Topic) else r for r in results]
    return results


async def _delete(broker: BrokerApi, doomed: list[Topic]) -> dict[str, KafkaError]:
    try:
        try:
            await broker.topics.remove_all(topic.name for topic in doomed)
        except OSError as e:
            error = _storage_error("writing the topic registry", e)
            return {topic.name: error for topic in doomed}
        directories = []
        for topic in doomed:
            directories += broker.logs.detach(topic.name, topic.partitions)
            for p in range(topic.partitions):
                broker.append_waiters.notify(topic.name, p)
            broker.coordinator.on_topic_deleted(topic.name)
            log.info("deleted topic %s", topic.name)
        await asyncio.to_thread(broker.logs.remove_directories, directories)
        return {}
    finally:
        for topic in doomed:
            broker.topics.release(topic.name)


async def _delete_in_store(broker: BrokerApi, doomed: list[Topic]) -> dict[str, KafkaError]:
    """Cluster mode: every broker forgets the topic when it next reads the store."""
    assert broker.cluster is not None
    try:
        return await broker.cluster.delete_topics([topic.name for topic in doomed])
    except KafkaError as e:
        error = _storage_error("deleting topics in the cluster store", e)
        return {topic.name: error for topic in doomed}
    finally:
        for topic in doomed:
            broker.topics.release(topic.name)


def _storage_error(what: str, cause: BaseException) -> KafkaError:
    log.error("%s failed: %s", what, cause)
    if isinstance(cause, KafkaError):
        return cause
    return KafkaError(ErrorCode.kafka_storage_error, f"{what} failed: {cause}")
