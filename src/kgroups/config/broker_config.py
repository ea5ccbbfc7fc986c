"""Broker configuration: Kafka's property names, Kafka's defaults.

A `server.properties` file and `--override key=value` pairs are merged (overrides
win). Every key is checked: an unknown key or an unparsable value stops the
broker at start with a message naming it. Keys that a Kafka operator may carry
over but that mean nothing to a single kgroups broker (thread counts, ZooKeeper,
replication) are accepted and reported as having no effect.

The keys and their defaults are in broker_settings, how listeners are read in
listeners.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from kgroups.config.broker_settings import (
    LISTENER_OAUTH_KEYS,
    LISTENER_SSL_KEYS,
    NO_EFFECT,
    SETTINGS,
    Setting,
)
from kgroups.config.errors import ConfigError as ConfigError  # re-exported
from kgroups.config.listeners import ListenerSpec as ListenerSpec  # re-exported
from kgroups.config.listeners import (
    advertised_addresses,
    check_listeners,
    listener_of_protocol,
    listener_specs,
    parse_listener,
)
from kgroups.config.sasl_listener_keys import ListenerSasl
from kgroups.config.sensitive import is_sensitive
from kgroups.config.setting_values import parse_ip_overrides as parse_ip_overrides  # re-exported
from kgroups.config.tls_settings import ListenerTls, scoped_ssl_key

log = logging.getLogger(__name__)

_REBALANCE_PROTOCOLS = frozenset({"classic", "consumer", "share", "streams"})


def read_properties(path: Path) -> dict[str, str]:
    """Java-properties subset: `key=value` or `key: value`, `#`/`!` comments."""
    props: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", line)
        if not m:
            raise ConfigError(f"{path}:{number}: expected key=value, got {raw!r}")
        props[m.group(1)] = m.group(2)
    return props


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    props: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {pair!r} is not of the form key=value")
        props[key.strip()] = value
    return props


def _parse(setting: Setting, key: str, raw: str) -> object:
    try:
        value = setting.parse(raw)
    except ValueError as e:
        raise ConfigError(f"invalid value {raw!r} for {key}: {e}") from None
    minimum = setting.minimum
    if minimum is not None and isinstance(value, int) and value < minimum:
        raise ConfigError(f"invalid value {raw!r} for {key}: must be at least {minimum}")
    return value


class BrokerConfig:
    """Validated broker settings; read them with Kafka's key names."""

    def __init__(self, props: Mapping[str, str] | None = None) -> None:
        self._values: dict[str, object] = {s.key: s.default for s in SETTINGS.values()}
        self.props = dict(props or {})  # as given: dynamic configs overlay them
        self.ignored: list[str] = []
        self.tls = ListenerTls(self._values)
        self.listener_sasl = ListenerSasl()
        for key, raw in (props or {}).items():
            if key in NO_EFFECT:
                self.ignored.append(key)
                continue
            scoped = scoped_ssl_key(key) if key not in SETTINGS else None
            if scoped is not None and scoped[1] in LISTENER_SSL_KEYS:
                listener, name = scoped
                self.tls.set(listener, name, _parse(SETTINGS[name], key, raw))
                continue
            setting = SETTINGS.get(key)
            oauth = self.listener_sasl.oauth_option(key) if setting is None else None
            if oauth is not None and oauth in LISTENER_OAUTH_KEYS:
                self.listener_sasl.set_oauth(key, _parse(SETTINGS[oauth], key, raw))
                continue
            if setting is None and self.listener_sasl.read(key, raw):
                continue
            if setting is None:
                raise ConfigError(f"unknown configuration key {key!r}")
            self._values[key] = _parse(setting, key, raw)
        self._check()

    def with_dynamic(self, *layers: Mapping[str, str]) -> BrokerConfig:
        """These settings with dynamic configs over them, the last layer
        winning (the cluster-wide default, then this broker's own)."""
        merged = dict(self.props)
        for layer in layers:
            merged.update(layer)
        return BrokerConfig(merged)

    @classmethod
    def load(cls, config_file: Path | None, overrides: Iterable[str] = ()) -> BrokerConfig:
        props = read_properties(config_file) if config_file else {}
        props.update(parse_overrides(overrides))
        return cls(props)

    def _check(self) -> None:
        if self.get_int("group.min.session.timeout.ms") > self.get_int(
            "group.max.session.timeout.ms"
        ):
            raise ConfigError(
                "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms"
            )
        self._check_share_groups()
        for name in ("session.timeout.ms", "heartbeat.interval.ms"):
            low = self.get_int(f"group.consumer.min.{name}")
            value = self.get_int(f"group.consumer.{name}")
            high = self.get_int(f"group.consumer.max.{name}")
            if not low <= value <= high:
                raise ConfigError(
                    f"group.consumer.{name} must lie between group.consumer.min.{name} "
                    f"and group.consumer.max.{name}"
                )
        if self.get_int("group.consumer.heartbeat.interval.ms") >= self.get_int(
            "group.consumer.session.timeout.ms"
        ):
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms must be below "
                "group.consumer.session.timeout.ms"
            )
        protocols = self.rebalance_protocols()
        # Kafka's streams groups are accepted and not served.
        if "classic" not in protocols or not protocols <= _REBALANCE_PROTOCOLS:
            raise ConfigError(
                "group.coordinator.rebalance.protocols must list classic, and may list consumer"
            )
        if self.get_int("default.replication.factor") != 1:
            raise ConfigError("default.replication.factor must be 1 on a single broker")
        self._check_listeners()

    def _check_share_groups(self) -> None:
        """Kafka's bounds of the share group settings."""
        for name in ("session.timeout.ms", "heartbeat.interval.ms", "record.lock.duration.ms"):
            low = self.get_int(f"group.share.min.{name}")
            value = self.get_int(f"group.share.{name}")
            high = self.get_int(f"group.share.max.{name}")
            if not low <= value <= high:
                raise ConfigError(
                    f"group.share.{name} must lie between group.share.min.{name} "
                    f"and group.share.max.{name}"
                )
        if not 2 <= self.get_int("group.share.delivery.count.limit") <= 10:
            raise ConfigError("group.share.delivery.count.limit must lie between 2 and 10")
        if not 100 <= self.get_int("group.share.partition.max.record.locks") <= 10000:
            raise ConfigError(
                "group.share.partition.max.record.locks must lie between 100 and 10000"
            )

    def _check_listeners(self) -> None:
        specs = self.listener_specs()
        inter = self._values["inter.broker.listener.name"]
        check_listeners(specs, self._advertised(), inter if isinstance(inter, str) else None)
        names = [spec.name for spec in specs]
        self.tls.check(names, (spec.name for spec in specs if spec.protocol.endswith("SSL")))
        self.listener_sasl.check({spec.name: spec.protocol for spec in specs})

    def _advertised(self) -> str:
        raw = self._values["advertised.listeners"]
        return raw if isinstance(raw, str) else ""

    def listener_specs(self) -> list[ListenerSpec]:
        """Every listener, with its security protocol from the protocol map."""
        return listener_specs(
            self.get_str("listeners"), self.get_str("listener.security.protocol.map")
        )

    def advertised_addresses(self, bound: Mapping[str, int]) -> dict[str, tuple[str, int]]:
        """Per listener name, the (host, port) its clients are told: from
        advertised.listeners, else the listener's own (port 0: the bound one)."""
        return advertised_addresses(self.listener_specs(), self._advertised(), bound)

    def inter_broker_listener(self) -> str:
        """The listener whose address is registered in the cluster store."""
        name = self._values["inter.broker.listener.name"]
        if isinstance(name, str):
            return name
        protocol = self.get_str("security.inter.broker.protocol")
        return listener_of_protocol(self.listener_specs(), protocol)

    def get(self, key: str) -> object:
        return self._values[key]

    def rebalance_protocols(self) -> frozenset[str]:
        """group.coordinator.rebalance.protocols, as a set."""
        value = self.get_str("group.coordinator.rebalance.protocols")
        return frozenset(p.strip() for p in value.split(",") if p.strip())

    def get_int(self, key: str) -> int:
        value = self._values[key]
        assert isinstance(value, int) and not isinstance(value, bool), key
        return value

    def get_str(self, key: str) -> str:
        value = self._values[key]
        assert isinstance(value, str), key
        return value

    def get_bool(self, key: str) -> bool:
        value = self._values[key]
        assert isinstance(value, bool), key
        return value

    @property
    def broker_id(self) -> int:
        node_id = self._values["node.id"]
        return node_id if isinstance(node_id, int) else self.get_int("broker.id")

    @property
    def log_dir(self) -> Path:
        dirs = self._values["log.dirs"]
        if self._values["log.dir"] is not None and dirs == SETTINGS["log.dirs"].default:
            dirs = self._values["log.dir"]
        assert isinstance(dirs, str)
        first = dirs.split(",")[0].strip()
        return Path(first)

    def listener(self) -> tuple[str, int]:
        """(host, port) to bind: the first listener."""
        first = self.get_str("listeners").split(",")[0]
        _name, host, port = parse_listener(first)
        return host, port

    def advertised(self, bound_port: int) -> tuple[str, int]:
        """(host, port) given to clients in Metadata and FindCoordinator."""
        raw = self._values["advertised.listeners"]
        if isinstance(raw, str) and raw:
            _name, host, port = parse_listener(raw.split(",")[0])
        else:
            host, port = self.listener()
        return host or "localhost", port or bound_port

    def _ms(self, ms_key: str, *coarser: tuple[str, int]) -> int:
        value = self._values[ms_key]
        if isinstance(value, int):
            return value
        for key, factor in coarser:
            v = self._values[key]
            if isinstance(v, int):
                return v * factor if v >= 0 else -1
        raise AssertionError(ms_key)

    @property
    def log_roll_ms(self) -> int:
        return self._ms("log.roll.ms", ("log.roll.hours", 3_600_000))

    @property
    def log_roll_jitter_ms(self) -> int:
        return self._ms("log.roll.jitter.ms", ("log.roll.jitter.hours", 3_600_000))

    @property
    def log_retention_ms(self) -> int:
        return self._ms(
            "log.retention.ms",
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        )

    @property
    def log_flush_interval_ms(self) -> int:
        value = self._values["log.flush.interval.ms"]
        return value if isinstance(value, int) else self.get_int("log.flush.scheduler.interval.ms")

    def describe(self) -> dict[str, str | None]:
        """Every setting as a string, and each per-listener TLS or SASL key set,
        for DescribeConfigs; a secret's value is None."""
        values = self._values | self.tls.scoped_values() | self.listener_sasl.scoped_values()
        return {k: None if is_sensitive(k) else _text(v) for k, v in values.items()}


def _text(value: object) -> str:
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
