"""A group's own configs (KIP-848), as Kafka's GroupConfig: the session
timeout and heartbeat interval of a consumer group's members, each within
the broker's ``group.consumer.min/max.*`` bounds. Unset, a group follows the
broker's ``group.consumer.session.timeout.ms`` and
``group.consumer.heartbeat.interval.ms``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kgroups.config.broker_config import BrokerConfig
from kgroups.config.config_types import INT, ConfigType
from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "GROUP_CONFIG_KEYS",
    "group_config_defaults",
    "group_config_doc",
    "group_config_kind",
    "validate_group_configs",
]

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"


class GroupSetting(NamedTuple):
    """A group key: the broker keys of its default and of its bounds, its type
    (Kafka's GroupConfig's) and what it does."""

    default: str
    low: str
    high: str
    kind: ConfigType
    doc: str


_KEYS = {
    SESSION_TIMEOUT: GroupSetting(
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        INT,
        "Session timeout of the group's members (ms).",
    ),
    HEARTBEAT_INTERVAL: GroupSetting(
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        INT,
        "Heartbeat interval of the group's members (ms).",
    ),
}
GROUP_CONFIG_KEYS = tuple(_KEYS)


def group_config_defaults(config: BrokerConfig) -> dict[str, str]:
    """Each group config's value for a group without overrides."""
    return {key: str(config.get_int(setting.default)) for key, setting in _KEYS.items()}


def group_config_kind(name: str) -> ConfigType:
    """Kafka's type of group config `name`, for DescribeConfigs."""
    return _KEYS[name].kind


def group_config_doc(name: str) -> str:
    """What group config `name` does, for DescribeConfigs' documentation."""
    return _KEYS[name].doc


def validate_group_configs(overrides: Mapping[str, str], config: BrokerConfig) -> None:
    """INVALID_CONFIG for an unknown name or a value out of the broker's bounds."""
    for name, raw in overrides.items():
        setting = _KEYS.get(name)
        if setting is None:
            raise KafkaError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        try:
            value = int(raw.strip(), 10)
        except ValueError:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {raw} for configuration {name}: Not a number of type INT",
            ) from None
        low, high = setting.low, setting.high
        if value < config.get_int(low):
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be greater than or equal to {low}"
            )
        if value > config.get_int(high):
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be less than or equal to {high}"
            )
