"""The synonyms DescribeConfigs lists when asked (KIP-226): every setting a
config's value could come from, in Kafka's order of precedence — the topic's
own, then each broker key (``log.retention.ms`` before ``.minutes`` before
``.hours``) from this broker's dynamic value, the cluster-wide dynamic
default, the broker's properties file, the built-in default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kgroups.config.broker_settings import SETTINGS
from kgroups.config.dynamic_broker import BROKER
from kgroups.partitions.config import BROKER_SYNONYMS

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["broker_synonyms", "topic_synonyms"]

# DescribeConfigs sources as Kafka numbers them.
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

Synonym = tuple[str, str | None, int]


def topic_synonyms(broker: BrokerApi, key: str, overrides: Mapping[str, str]) -> list[Synonym]:
    own = [(key, overrides[key], DYNAMIC_TOPIC_CONFIG)] if key in overrides else []
    return own + broker_synonyms(broker, BROKER_SYNONYMS.get(key, ()))


def broker_synonyms(broker: BrokerApi, names: Sequence[str]) -> list[Synonym]:
    dynamic = broker.dynamic_configs
    layers = (
        (dynamic.get(BROKER, str(broker.broker_id)), DYNAMIC_BROKER_CONFIG),
        (dynamic.get(BROKER, ""), DYNAMIC_DEFAULT_BROKER_CONFIG),
        (broker.config.props, STATIC_BROKER_CONFIG),
    )
    out: list[Synonym] = []
    for name in names:  # by name first, as Kafka: log.retention.ms beats .minutes anywhere
        out += [(name, values[name], source) for values, source in layers if name in values]
        setting = SETTINGS.get(name)
        if setting is not None and setting.default is not None:
            default = setting.default
            text = str(default).lower() if isinstance(default, bool) else str(default)
            out.append((name, text, DEFAULT_CONFIG))
    return out
