"""A broker's configs changed by IncrementalAlterConfigs or AlterConfigs
(KIP-226): the keys Kafka lets change at run time that kgroups has, for this
broker (resource name: its id) or as every broker's default (empty name).
The topics' logs take the new defaults at once, under their own overrides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kgroups.config.dynamic_broker import BROKER, BROKER_LIST_KEYS, check_broker_configs
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.dynamic_config_writes import write_dynamic_configs
from kgroups.handlers.topic_configs import Change
from kgroups.partitions.config import LogConfig

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["alter_broker_configs", "check_broker_name"]


def check_broker_name(broker: BrokerApi, name: str) -> None:
    """A broker's own configs are changed on that broker, as Kafka's
    ConfigAdminManager requires (its admin client sends them there)."""
    try:
        node = int(name)
    except ValueError:
        raise KafkaError(
            ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}"
        ) from None
    if node != broker.broker_id:
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {broker.broker_id}, but received {name}",
        )


async def alter_broker_configs(
    broker: BrokerApi, name: str, change: Change, *, validate_only: bool
) -> None:
    if name:
        check_broker_name(broker, name)
    dynamic = broker.dynamic_configs
    mine = str(broker.broker_id)

    def plan(overrides: Mapping[str, str]) -> dict[str, str]:
        effective = {k: v for k, v in broker.effective_config.describe().items() if v is not None}
        wanted = change(overrides, {**effective, **overrides}, BROKER_LIST_KEYS)
        layers = (
            (wanted, dynamic.get(BROKER, mine)) if not name else (dynamic.get(BROKER, ""), wanted)
        )
        check_broker_configs(broker.config, wanted, *layers)
        LogConfig.from_broker_config(wanted)  # the log.* values as topics' defaults
        return wanted

    plan(dynamic.get(BROKER, name))  # refused here, before anything is written
    if not validate_only:
        await write_dynamic_configs(broker, BROKER, name, plan)
