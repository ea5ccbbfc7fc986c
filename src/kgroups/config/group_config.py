"""A group's own configs (KIP-848), as Kafka's GroupConfig: the session
timeout and heartbeat interval of a consumer group's members, each within
the broker's ``group.consumer.min/max.*`` bounds. Unset, a group follows the
broker's ``group.consumer.session.timeout.ms`` and
``group.consumer.heartbeat.interval.ms``."""

from __future__ import annotations

from collections.abc import Mapping

from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["GROUP_CONFIG_KEYS", "group_config_defaults", "validate_group_configs"]

SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
# Each group key: the broker key of its default, and those of its bounds.
_KEYS = {
    SESSION_TIMEOUT: (
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    HEARTBEAT_INTERVAL: (
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
}
GROUP_CONFIG_KEYS = tuple(_KEYS)


def group_config_defaults(config: BrokerConfig) -> dict[str, str]:
    """Each group config's value for a group without overrides."""
    return {key: str(config.get_int(default)) for key, (default, _, _) in _KEYS.items()}


def validate_group_configs(overrides: Mapping[str, str], config: BrokerConfig) -> None:
    """INVALID_CONFIG for an unknown name or a value out of the broker's bounds."""
    for name, raw in overrides.items():
        keys = _KEYS.get(name)
        if keys is None:
            raise KafkaError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        try:
            value = int(raw.strip(), 10)
        except ValueError:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {raw} for configuration {name}: Not a number of type INT",
            ) from None
        _default, low, high = keys
        if value < config.get_int(low):
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be greater than or equal to {low}"
            )
        if value > config.get_int(high):
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be less than or equal to {high}"
            )
