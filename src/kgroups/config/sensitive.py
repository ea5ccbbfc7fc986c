"""Broker configs that are secrets: those of PASSWORD type.

DescribeConfigs answers them as sensitive with no value, and the broker never
logs them. A per-listener key (``listener.name.<name>.<key>``) is a secret when
its base key is one, as Kafka reads per-listener keys with the base key's type.
"""

from __future__ import annotations

from kgroups.config.broker_settings import setting_kind
from kgroups.config.config_types import PASSWORD


def is_sensitive(key: str) -> bool:
    """Whether the value of broker config `key` is a secret."""
    return setting_kind(key) is PASSWORD
