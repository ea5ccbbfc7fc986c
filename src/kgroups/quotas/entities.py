"""Quota entities and the keys each accepts, checked as Kafka's controller
checks an AlterClientQuotas entry.

An entity names up to two parts: ``user`` alone, ``user`` with ``client-id``,
``client-id`` alone, or ``ip`` alone. A part's name may be None: the default
for every user, client id or address without a quota of its own.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping

from kgroups.errors import ErrorCode, KafkaError

__all__ = [
    "CLIENT_ID",
    "CONNECTION_CREATION_RATE",
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "IP",
    "PRODUCER_BYTE_RATE",
    "REQUEST_PERCENTAGE",
    "USER",
    "Entity",
    "check_entity",
    "check_value",
    "decode_entity",
    "encode_entity",
    "keys_of",
]

USER, CLIENT_ID, IP = "user", "client-id", "ip"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

Entity = tuple[tuple[str, str | None], ...]
"""(type, name) parts sorted by type; a None name is the type's default."""

# Kafka's QuotaConfigs: a key's type decides which values it takes.
_LONG, _DOUBLE, _INT = "long", "double", "int"
_USER_OR_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: _LONG,
    CONSUMER_BYTE_RATE: _LONG,
    REQUEST_PERCENTAGE: _DOUBLE,
    CONTROLLER_MUTATION_RATE: _DOUBLE,
}
_IP_KEYS = {CONNECTION_CREATION_RATE: _INT}
_TYPES = (USER, CLIENT_ID, IP)
_EPSILON = 1e-6


def check_entity(parts: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity, if it is one a quota can be set on (else INVALID_REQUEST)."""
    seen: dict[str, str | None] = {}
    for etype, name in parts:
        if etype in seen:
            raise _invalid(f"Invalid empty client quota entity, duplicate entity entry {etype}")
        if etype not in _TYPES:
            raise _invalid(f"Unhandled client quota entity type: {etype}")
        if name is not None and not name:
            raise _invalid(f"Empty {etype} not supported")
        seen[etype] = name
    if not seen or (IP in seen and len(seen) > 1):
        raise _invalid("Invalid empty client quota entity")
    address = seen.get(IP)
    if IP in seen and address is not None and not _is_address(address):
        raise _invalid(f"{address} is not a valid IP.")
    return tuple(sorted(seen.items(), key=lambda part: part[0]))


def keys_of(entity: Entity) -> Mapping[str, str]:
    """The quota keys an entity accepts, with their types."""
    return _IP_KEYS if entity[0][0] == IP else _USER_OR_CLIENT_KEYS


def check_value(entity: Entity, key: str, value: float) -> None:
    """Refuse a key the entity does not take, or a value its type cannot hold."""
    kind = keys_of(entity).get(key)
    if kind is None:
        raise _invalid(f"Invalid configuration key {key}")
    if value != value or value in (float("inf"), float("-inf")):
        raise _invalid(f"Configuration {key} must be a finite number")
    if value < 0:
        raise _invalid(f"Configuration {key} must not be negative")
    if kind != _DOUBLE and abs(int(value + _EPSILON) - value) > _EPSILON:
        raise _invalid(f"Configuration {key} must be a{'n Int' if kind == _INT else ' Long'} value")


def encode_entity(entity: Entity) -> str:
    """The entity as the name its quotas are stored under."""
    return json.dumps([[t, n] for t, n in entity], separators=(",", ":"))


def decode_entity(name: str) -> Entity:
    return tuple((str(t), None if n is None else str(n)) for t, n in json.loads(name))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)
