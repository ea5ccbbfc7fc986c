"""A group's configs changed by IncrementalAlterConfigs or AlterConfigs
(KIP-848): ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms``, checked against the broker's bounds as
Kafka's GroupConfig does; the group's coordinator uses them from the next
heartbeat on. A group need not exist yet, as in Kafka."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kgroups.config.group_config import group_config_defaults, validate_group_configs
from kgroups.handlers.dynamic_config_writes import write_dynamic_configs
from kgroups.handlers.topic_configs import Change

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["GROUP", "alter_group_configs"]

GROUP = 32


async def alter_group_configs(
    broker: BrokerApi, name: str, change: Change, *, validate_only: bool
) -> None:
    defaults = group_config_defaults(broker.config)

    def plan(overrides: Mapping[str, str]) -> dict[str, str]:
        wanted = change(overrides, {**defaults, **overrides}, frozenset())
        validate_group_configs(wanted, broker.config)
        return wanted

    plan(broker.dynamic_configs.get(GROUP, name))  # refused here, before anything is written
    if not validate_only:
        await write_dynamic_configs(broker, GROUP, name, plan)
