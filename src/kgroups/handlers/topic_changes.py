"""Creating and deleting topics, and adding partitions to them, for requests,
without blocking the event loop.

Each request's topics are checked here (names, partition counts, configs),
reserved in the topic registry so no other request takes a name meanwhile,
and handed to the partition home in one call, which makes them exist or not
for each topic as a whole: directories and one durable registry write on a
broker alone (``storage/home.py``), rows in the store in a cluster. The work
runs in a task of its own, shielded from the request's cancellation, so the
registry and the partitions always agree.
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
from kgroups.topics.names import Topic

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["NewTopic", "add_partitions", "create_topics", "delete_topics"]

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
        failed = await asyncio.shield(asyncio.ensure_future(_create(broker, planned)))
        results = [failed.get(r.name, r) if isinstance(r, Topic) else r for r in results]
    return results


async def _create(
    broker: BrokerApi, planned: list[tuple[Topic, LogConfig]]
) -> dict[str, KafkaError]:
    try:
        failed = await broker.partitions.create_topics(planned)
    except KafkaError as e:
        error = storage_error("creating topics", e)
        failed = {topic.name: error for topic, _config in planned}
    finally:
        for topic, _config in planned:
            broker.topics.release(topic.name)
    for topic, _config in planned:
        if topic.name not in failed:
            log.info("created topic %s with %d partition(s)", topic.name, topic.partitions)
    return failed


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
        failed = await asyncio.shield(asyncio.ensure_future(_delete(broker, doomed)))
        results = [failed.get(r.name, r) if isinstance(r, Topic) else r for r in results]
    return results


async def _delete(broker: BrokerApi, doomed: list[Topic]) -> dict[str, KafkaError]:
    try:
        return await broker.partitions.delete_topics(doomed)
    except KafkaError as e:
        error = storage_error("deleting topics", e)
        return {topic.name: error for topic in doomed}
    finally:
        for topic in doomed:
            broker.topics.release(topic.name)


async def add_partitions(broker: BrokerApi, topic: Topic, count: int) -> Topic:
    """Grow ``topic`` (checked, not reserved) to ``count`` partitions; the topic
    grown. Its name is reserved meanwhile, so it is not deleted or grown twice."""
    broker.topics.reserve(topic.name)
    return await asyncio.shield(asyncio.ensure_future(_grow(broker, topic, count)))


async def _grow(broker: BrokerApi, topic: Topic, count: int) -> Topic:
    try:
        grown = await broker.partitions.add_partitions(topic, count, broker.topic_config(topic))
    except KafkaError as e:
        raise storage_error(f"adding partitions to {topic.name}", e) from None
    finally:
        broker.topics.release(topic.name)
    log.info("topic %s now has %d partition(s)", topic.name, grown.partitions)
    return grown


def storage_error(what: str, cause: KafkaError) -> KafkaError:
    log.error("%s failed: %s", what, cause)
    return cause
