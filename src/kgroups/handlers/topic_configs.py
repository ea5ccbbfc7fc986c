"""A topic's configs changed by AlterConfigs or IncrementalAlterConfigs.

The new overrides are checked as CreateTopics checks them (INVALID_CONFIG
naming the key), then handed to the partition home, which makes them durable
(the topic registry, or the cluster store) and applies them to the topic's
logs: retention, segment rolls, compaction and the append checks read them
from then on. The name is reserved meanwhile, so the topic is not deleted or
grown while its configs are written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.topics.names import Topic

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["TOPIC_LIST_KEYS", "Change", "alter_topic_configs"]

log = logging.getLogger(__name__)

# Keys whose value is a list (APPEND and SUBTRACT apply to them).
TOPIC_LIST_KEYS = frozenset(
    {
        "cleanup.policy",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    }
)

Change = Callable[[Mapping[str, str], Mapping[str, str], frozenset[str]], dict[str, str]]
"""(overrides, effective values, list-valued keys) -> the overrides wanted."""


async def alter_topic_configs(
    broker: BrokerApi, name: str, change: Change, *, validate_only: bool
) -> None:
    topic = broker.topics.get(name)
    if topic is None and broker.cluster is not None:
        await broker.cluster.refresh()  # created through another broker?
        topic = broker.topics.get(name)
    if topic is None or broker.topics.is_reserved(name):
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
    if topic.internal:
        # Its coordinator made it, compacted, with the broker's settings: a
        # client's retention or cleanup policy could cost groups their offsets
        # or transactions their state (Kafka leaves this to ACLs).
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Cannot change the configs of internal topic {name}; the broker sets them.",
        )
    default = broker.default_log_config

    def plan(overrides: Mapping[str, str]) -> tuple[dict[str, str], LogConfig]:
        before = default.with_overrides(overrides)
        wanted = change(overrides, before.to_topic_configs(), TOPIC_LIST_KEYS)
        return wanted, default.with_overrides(wanted)  # INVALID_CONFIG

    plan(topic.configs)  # refused here, before anything is written
    if validate_only:
        return
    broker.topics.reserve(name)
    await asyncio.shield(asyncio.ensure_future(_apply(broker, topic, plan)))


async def _apply(broker: BrokerApi, topic: Topic, plan: ConfigPlan) -> None:
    try:
        changed = await broker.partitions.alter_topic_configs(topic, plan)
    except KafkaError as e:
        log.warning("changing the configs of topic %s failed: %s", topic.name, e)
        raise
    finally:
        broker.topics.release(topic.name)
    log.info("topic %s configs are now %s", topic.name, changed.configs)
