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
from kgroups.partitions.config import LogConfig
from kgroups.topics.names import Topic

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["TOPIC_LIST_KEYS", "Change", "alter_topic_configs"]

log = logging.getLogger(__name__)

# Keys whose value is a list (APPEND and SUBTRACT apply to them).
TOPIC_LIST_KEYS = frozenset({"cleanup.policy"})

Change = Callable[[Mapping[str, str], Mapping[str, str], frozenset[str]], dict[str, str]]
"""(overrides, effective values, list-valued keys) -> the overrides wanted."""


async def alter_topic_configs(
    broker: BrokerApi, name: str, change: Change, *, validate_only: bool
) -> None:
    topic = broker.topics.get(name)
    if topic is None or broker.topics.is_reserved(name):
        raise KafkaError(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
    before = broker.topic_config(topic)
    overrides = change(topic.configs, before.to_topic_configs(), TOPIC_LIST_KEYS)
    config = broker.default_log_config.with_overrides(overrides)  # INVALID_CONFIG
    if topic.internal and config.cleanup_policy != before.cleanup_policy:
        # Its coordinator created it compacted: deleting by age would cost
        # groups their offsets, or transactions their state.
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Cannot change cleanup.policy of internal topic {name}; the broker sets it.",
        )
    if validate_only:
        return
    broker.topics.reserve(name)
    await asyncio.shield(asyncio.ensure_future(_apply(broker, topic, overrides, config)))


async def _apply(
    broker: BrokerApi, topic: Topic, overrides: dict[str, str], config: LogConfig
) -> None:
    try:
        await broker.partitions.alter_topic_configs(topic, overrides, config)
    except KafkaError as e:
        log.error("changing the configs of topic %s failed: %s", topic.name, e)
        raise
    finally:
        broker.topics.release(topic.name)
    log.info("topic %s configs are now %s", topic.name, overrides)
