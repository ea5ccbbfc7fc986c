"""Listeners: ``NAME://host:port`` entries, the map of listener names to
security protocols, and the rules a broker's listeners must follow.

BrokerConfig reads its ``listeners``, ``advertised.listeners`` and
``listener.security.protocol.map`` settings through these functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.config.errors import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    protocol: str
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
    host: str
    port: int


def parse_listener(value: str) -> tuple[str, str, int]:
    """`NAME://host:port` -> (name, host, port); an empty host means all interfaces."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:]*):(\d+)", value.strip())
    if not m:
        raise ValueError(f"listener {value!r} is not of the form PLAINTEXT://host:port")
    name, host, port = m.group(1), m.group(2).strip("[]"), int(m.group(3))
    if not 0 <= port <= 65535:
        raise ValueError(f"listener port {port} is out of range")
    return name, host, port


def listener_items(value: str) -> list[str]:
    """The entries of a comma-separated list of listeners."""
    return [v.strip() for v in value.split(",") if v.strip()]


def listener_list(value: str) -> str:
    """``listeners``, ``advertised.listeners``: each entry must parse."""
    for item in listener_items(value):
        parse_listener(item)
    return value.strip()


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL`` pairs, comma-separated."""
    out: dict[str, str] = {}
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or protocol.strip() not in SECURITY_PROTOCOLS:
            raise ValueError(f"{item!r} is not of the form NAME:{'|'.join(SECURITY_PROTOCOLS)}")
        out[name.strip()] = protocol.strip()
    return out


def protocol_map(value: str) -> str:
    parse_protocol_map(value)
    return value.strip()


def listener_specs(listeners: str, protocols_by_name: str) -> list[ListenerSpec]:
    """Every listener, with its security protocol from the protocol map."""
    protocols = parse_protocol_map(protocols_by_name)
    specs = []
    for item in listener_items(listeners):
        name, host, port = parse_listener(item)
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"listener {name} has no security protocol in listener.security.protocol.map"
            )
        specs.append(ListenerSpec(name, protocol, host, port))
    return specs


def check_listeners(specs: list[ListenerSpec], advertised: str, inter_broker: str | None) -> None:
    """Each listener named once, on a port of its own; the advertised and the
    inter-broker listeners among them."""
    names = [spec.name for spec in specs]
    if not specs or len(set(names)) != len(names):
        raise ConfigError("listeners must name at least one listener, each once")
    if len({spec.port for spec in specs if spec.port}) != len([s for s in specs if s.port]):
        raise ConfigError("listeners must each use a port of their own")
    for item in listener_items(advertised):
        name = parse_listener(item)[0]
        if name not in names:
            raise ConfigError(f"advertised.listeners names {name}, which is not a listener")
    if inter_broker is not None and inter_broker not in names:
        raise ConfigError(f"inter.broker.listener.name {inter_broker} is not a listener")


def advertised_addresses(
    specs: list[ListenerSpec], advertised: str, bound: Mapping[str, int]
) -> dict[str, tuple[str, int]]:
    """Per listener name, the (host, port) its clients are told: from
    ``advertised``, else the listener's own (port 0: the bound one)."""
    given = {
        name: (host, port) for name, host, port in map(parse_listener, listener_items(advertised))
    }
    out = {}
    for spec in specs:
        host, port = given.get(spec.name, (spec.host, spec.port))
        out[spec.name] = (host or "localhost", port or bound.get(spec.name, 0))
    return out


def listener_of_protocol(specs: list[ListenerSpec], protocol: str) -> str:
    """The first listener of ``protocol``, else the first listener."""
    return next((s.name for s in specs if s.protocol == protocol), specs[0].name)
