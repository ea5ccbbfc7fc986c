"""The type of a config's value, as DescribeConfigs reports it (KIP-569) and
Kafka numbers it. Every setting table (broker settings, topic configs, group
configs, client metrics subscriptions) names each key's type, Kafka's own
where Kafka has the key."""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "BOOLEAN",
    "CLASS",
    "DOUBLE",
    "INT",
    "LIST",
    "LONG",
    "PASSWORD",
    "SHORT",
    "STRING",
    "ConfigType",
]


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


BOOLEAN = ConfigType.BOOLEAN
STRING = ConfigType.STRING
INT = ConfigType.INT
SHORT = ConfigType.SHORT
LONG = ConfigType.LONG
DOUBLE = ConfigType.DOUBLE
LIST = ConfigType.LIST
CLASS = ConfigType.CLASS
PASSWORD = ConfigType.PASSWORD
