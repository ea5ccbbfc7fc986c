"""Client metrics subscriptions (KIP-714): the configs of a CLIENT_METRICS
resource, as Kafka's ClientMetricsConfigs reads them.

A subscription, named by its resource, has three keys: ``metrics`` (metric
name prefixes the matching clients are asked for; ``*`` for every metric),
``interval.ms`` (how often they push, 100 ms to one hour, five minutes by
default) and ``match`` (``selector=regex`` pairs a client must all match,
whole: client_instance_id, client_id, client_software_name,
client_software_version, client_source_address, client_source_port). A
subscription without ``match`` matches every client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.config.config_types import INT, LIST, ConfigType
from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "ALL_METRICS",
    "CLIENT_METRICS",
    "CLIENT_METRICS_KEYS",
    "DEFAULT_INTERVAL_MS",
    "MATCH_SELECTORS",
    "Subscription",
    "client_metrics_config_doc",
    "client_metrics_config_kind",
    "parse_subscription",
]

CLIENT_METRICS = 16  # ConfigResource.Type as Kafka numbers it

METRICS = "metrics"
INTERVAL_MS = "interval.ms"
MATCH = "match"
# Each key's type (Kafka's ClientMetricsConfigs') and what it does.
_DESCRIBED: dict[str, tuple[ConfigType, str | None]] = {
    METRICS: (LIST, "Metric name prefixes the matching clients push (* for all)."),
    INTERVAL_MS: (INT, "How often the matching clients push their metrics (ms)."),
    MATCH: (LIST, "selector=regex pairs a client must all match to be subscribed."),
}
CLIENT_METRICS_KEYS = tuple(_DESCRIBED)

ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
_MIN_INTERVAL_MS = 100
_MAX_INTERVAL_MS = 3_600_000

MATCH_SELECTORS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: tuple[tuple[str, re.Pattern[str]], ...]

    def matches(self, attributes: Mapping[str, str | None]) -> bool:
        """Every selector's regex matches the client's attribute, whole."""
        for selector, pattern in self.match:
            value = attributes.get(selector)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def client_metrics_config_kind(name: str) -> ConfigType:
    """Kafka's type of client metrics config `name`, for DescribeConfigs; UNKNOWN
    for a key outside the table, so that describing what is stored never fails."""
    return _DESCRIBED.get(name, (ConfigType.UNKNOWN, None))[0]


def client_metrics_config_doc(name: str) -> str | None:
    """What client metrics config `name` does, for DescribeConfigs' documentation."""
    return _DESCRIBED.get(name, (ConfigType.UNKNOWN, None))[1]


def parse_subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """The subscription of a CLIENT_METRICS resource's configs; INVALID_REQUEST
    for an empty name, an unknown key or an interval out of range, and
    INVALID_CONFIG for a value that does not parse, as Kafka answers."""
    if not name:
        raise KafkaError(ErrorCode.invalid_request, "Subscription name can't be empty")
    for key in configs:
        if key not in CLIENT_METRICS_KEYS:
            raise KafkaError(
                ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}"
            )
    interval = DEFAULT_INTERVAL_MS
    if INTERVAL_MS in configs:
        raw = configs[INTERVAL_MS]
        try:
            interval = int(raw.strip(), 10)
        except ValueError:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {raw} for configuration {INTERVAL_MS}: Not a number of type INT",
            ) from None
        if not _MIN_INTERVAL_MS <= interval <= _MAX_INTERVAL_MS:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between"
                f" {_MIN_INTERVAL_MS} and {_MAX_INTERVAL_MS} (1 hour)",
            )
    return Subscription(
        name=name,
        metrics=frozenset(_items(configs.get(METRICS, ""))),
        interval_ms=interval,
        match=_patterns(_items(configs.get(MATCH, ""))),
    )


def _patterns(items: list[str]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    patterns: dict[str, re.Pattern[str]] = {}
    for item in items:
        # Exactly one '=', as Kafka splits it (a regex with '=' is refused there too).
        parts = item.split("=")
        selector = parts[0].strip()
        if len(parts) != 2 or not parts[1] or selector not in MATCH_SELECTORS:
            raise KafkaError(ErrorCode.invalid_config, f"Illegal client matching pattern: {item}")
        try:
            patterns[selector] = re.compile(parts[1].strip())
        except re.error:
            raise KafkaError(
                ErrorCode.invalid_config, f"Illegal client matching pattern: {item}"
            ) from None
    return tuple(sorted(patterns.items()))


def _items(value: str) -> list[str]:
    """A LIST config's items, as Kafka splits them (commas, trimmed)."""
    return [item.strip() for item in value.split(",") if item.strip()] if value.strip() else []
