"""A client metrics subscription changed by IncrementalAlterConfigs or
AlterConfigs (KIP-714): the CLIENT_METRICS resource named after it, its keys
checked as Kafka's ClientMetricsConfigs does. Written where groups' configs
are (dynamic_config_writes.py), so every broker of a cluster takes it; the
broker's client telemetry hears of each change (server/broker.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kgroups.config.client_metrics import CLIENT_METRICS, parse_subscription
from kgroups.handlers.dynamic_config_writes import write_dynamic_configs
from kgroups.handlers.topic_configs import Change

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["alter_client_metrics_configs"]

# Lists of names or patterns: APPEND and SUBTRACT apply to them.
_LIST_KEYS = frozenset({"metrics", "match"})


async def alter_client_metrics_configs(
    broker: BrokerApi, name: str, change: Change, *, validate_only: bool
) -> None:
    def plan(overrides: Mapping[str, str]) -> dict[str, str]:
        wanted = change(overrides, overrides, _LIST_KEYS)
        parse_subscription(name, wanted)
        return wanted

    plan(broker.dynamic_configs.get(CLIENT_METRICS, name))  # refused here, before any write
    if not validate_only:
        await write_dynamic_configs(broker, CLIENT_METRICS, name, plan)
