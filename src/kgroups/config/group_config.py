"""A group's own configs (KIP-848, KIP-932), as Kafka's GroupConfig: the
session timeout and heartbeat interval of a consumer group's members, each
within the broker's ``group.consumer.min/max.*`` bounds; a share group's
session timeout, heartbeat interval and record lock duration within the
``group.share.min/max.*`` bounds, where its share partitions start
(``share.auto.offset.reset``) and whether they stop at the last stable
offset (``share.isolation.level``). Unset, a group follows the broker's
settings (or Kafka's defaults: latest, read_uncommitted)."""

from __future__ import annotations

from collections.abc import Mapping

from kgroups.config.broker_config import BrokerConfig
from kgroups.config.iso_durations import parse_duration_ms
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
# Share groups (KIP-932): their members' timeouts and record locks, within
# the broker's group.share.min/max.* bounds.
_KEYS.update(
    {
        f"share.{name}": (
            f"group.share.{name}",
            f"group.share.min.{name}",
            f"group.share.max.{name}",
        )
        for name in ("session.timeout.ms", "heartbeat.interval.ms", "record.lock.duration.ms")
    }
)
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
# Text group configs: their Kafka default and the values they take.
_CHOICES = {
    SHARE_AUTO_OFFSET_RESET: ("latest", ("latest", "earliest")),
    SHARE_ISOLATION_LEVEL: ("read_uncommitted", ("read_uncommitted", "read_committed")),
}
GROUP_CONFIG_KEYS = (*_KEYS, *_CHOICES)
# share.auto.offset.reset=by_duration:<ISO-8601 duration>: from the records
# written since that long ago.
BY_DURATION = "by_duration:"


def _check_by_duration(raw: str) -> None:
    text = raw.strip()[len(BY_DURATION) :]
    try:
        ms = parse_duration_ms(text)
    except ValueError:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"Invalid value {raw} for configuration {SHARE_AUTO_OFFSET_RESET}: "
            "by_duration must be an ISO-8601 duration (PnDTnHnMn.nS)",
        ) from None
    if ms < 0:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"Invalid value {raw} for configuration {SHARE_AUTO_OFFSET_RESET}: "
            "a negative duration is not allowed",
        )


def group_config_defaults(config: BrokerConfig) -> dict[str, str]:
    """Each group config's value for a group without overrides."""
    defaults = {key: str(config.get_int(default)) for key, (default, _, _) in _KEYS.items()}
    defaults.update((key, default) for key, (default, _) in _CHOICES.items())
    return defaults


def validate_group_configs(overrides: Mapping[str, str], config: BrokerConfig) -> None:
    """INVALID_CONFIG for an unknown name or a value out of the broker's bounds."""
    for name, raw in overrides.items():
        if name == SHARE_AUTO_OFFSET_RESET and raw.strip().lower().startswith(BY_DURATION):
            _check_by_duration(raw)
            continue
        choice = _CHOICES.get(name)
        if choice is not None:
            if raw.strip().lower() not in choice[1]:
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"Invalid value {raw} for configuration {name}: "
                    f"String must be one of: {', '.join(choice[1])}",
                )
            continue
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
