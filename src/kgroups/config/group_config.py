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
from typing import NamedTuple

from kgroups.config.broker_config import BrokerConfig
from kgroups.config.config_types import INT, STRING, ConfigType
from kgroups.config.iso_durations import parse_duration_ms
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
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
# share.auto.offset.reset=by_duration:<ISO-8601 duration>: from the records
# written since that long ago.
BY_DURATION = "by_duration:"


class GroupSetting(NamedTuple):
    """A group key: the broker keys of its default and of its bounds, its type
    (Kafka's GroupConfig's) and what it does."""

    default: str
    low: str
    high: str
    kind: ConfigType
    doc: str


class GroupChoice(NamedTuple):
    """A text group key: Kafka's default and the values it takes."""

    default: str
    values: tuple[str, ...]
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
    # Share groups (KIP-932), within the broker's group.share.min/max.* bounds.
    "share.session.timeout.ms": GroupSetting(
        "group.share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
        INT,
        "Session timeout of the share group's members (ms).",
    ),
    "share.heartbeat.interval.ms": GroupSetting(
        "group.share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
        INT,
        "Heartbeat interval of the share group's members (ms).",
    ),
    "share.record.lock.duration.ms": GroupSetting(
        "group.share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
        INT,
        "How long a record acquired by a share group member stays its own (ms).",
    ),
}
_CHOICES = {
    SHARE_AUTO_OFFSET_RESET: GroupChoice(
        "latest",
        ("latest", "earliest"),
        "Where a share partition starts: latest, earliest or by_duration:<ISO-8601 duration>.",
    ),
    SHARE_ISOLATION_LEVEL: GroupChoice(
        "read_uncommitted",
        ("read_uncommitted", "read_committed"),
        "Whether share fetches stop at the last stable offset (read_committed).",
    ),
}
GROUP_CONFIG_KEYS = (*_KEYS, *_CHOICES)


def group_config_defaults(config: BrokerConfig) -> dict[str, str]:
    """Each group config's value for a group without overrides."""
    defaults = {key: str(config.get_int(setting.default)) for key, setting in _KEYS.items()}
    defaults.update((key, choice.default) for key, choice in _CHOICES.items())
    return defaults


def group_config_kind(name: str) -> ConfigType:
    """Kafka's type of group config `name`, for DescribeConfigs."""
    return STRING if name in _CHOICES else _KEYS[name].kind


def group_config_doc(name: str) -> str:
    """What group config `name` does, for DescribeConfigs' documentation."""
    return _CHOICES[name].doc if name in _CHOICES else _KEYS[name].doc


def validate_group_configs(overrides: Mapping[str, str], config: BrokerConfig) -> None:
    """INVALID_CONFIG for an unknown name or a value out of the broker's bounds."""
    for name, raw in overrides.items():
        if name == SHARE_AUTO_OFFSET_RESET and raw.strip().lower().startswith(BY_DURATION):
            _check_by_duration(raw)
            continue
        choice = _CHOICES.get(name)
        if choice is not None:
            if raw.strip().lower() not in choice.values:
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"Invalid value {raw} for configuration {name}: "
                    f"String must be one of: {', '.join(choice.values)}",
                )
            continue
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
