"""Parsers of broker setting values as Kafka writes them: booleans, integers,
choices, per-address connection caps and authorizer class names.

Each takes the raw text of a setting and returns its value, or raises
ValueError saying what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kgroups.config.authorizers import AUTHORIZER_CLASS_NAMES

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


def boolean(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected true or false")


def integer(value: str) -> int:
    return int(value.strip())


def int_between(low: int, high: int, *also: int) -> Callable[[str], int]:
    """An integer from ``low`` to ``high``, or one of ``also``."""

    def parse(value: str) -> int:
        number = int(value.strip())
        if not low <= number <= high and number not in also:
            extra = "".join(f" or {v}" for v in also)
            raise ValueError(f"expected a number from {low} to {high}{extra}")
        return number

    return parse


def text(value: str) -> str:
    return value.strip()


def ratio(value: str) -> str:
    """A number from 0 to 1, kept as written: the default of a topic config
    that the topic's own value overrides."""
    number = float(value.strip())
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValueError("expected a number between 0 and 1")
    return value.strip()


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        v = value.strip()
        if v not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return v

    return parse


def lower_choice(*allowed: str) -> Callable[[str], str]:
    """A choice read case-insensitively, as Kafka reads its enum settings."""
    choose = choice(*allowed)
    return lambda value: choose(value.lower())


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, comma-separated."""
    out: dict[str, int] = {}
    for item in filter(None, (v.strip() for v in value.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"{item!r} is not of the form host:count")
        out[host.strip()] = int(count)
    return out


def ip_overrides(value: str) -> str:
    parse_ip_overrides(value)
    return value.strip()


def authorizer(value: str) -> str:
    if value and value not in AUTHORIZER_CLASS_NAMES:
        raise ValueError(
            f"unknown authorizer {value!r}: use one of {sorted(AUTHORIZER_CLASS_NAMES)}"
        )
    return value
