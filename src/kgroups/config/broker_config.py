"""Broker configuration: Kafka's property names, Kafka's defaults.

A `server.properties` file and `--override key=value` pairs are merged (overrides
win). Every key is checked: an unknown key or an unparsable value stops the
broker at start with a message naming it. Keys that a Kafka operator may carry
over but that mean nothing to a single kgroups broker (thread counts, ZooKeeper,
replication) are accepted and reported as having no effect.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kgroups.config.errors import ConfigError as ConfigError  # re-exported
from kgroups.config.sasl_listener_keys import ListenerSasl, sasl_mechanisms
from kgroups.config.sensitive import is_sensitive
from kgroups.config.tls_settings import ListenerTls, scoped_ssl_key, tls_versions

log = logging.getLogger(__name__)

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected true or false")


def _int(value: str) -> int:
    return int(value.strip())


def _str(value: str) -> str:
    return value.strip()


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        v = value.strip()
        if v not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return v

    return parse


def _lower_choice(*allowed: str) -> Callable[[str], str]:
    """A choice read case-insensitively, as Kafka reads its enum settings."""
    choose = _choice(*allowed)
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


def _ip_overrides(value: str) -> str:
    parse_ip_overrides(value)
    return value.strip()


def _authorizer(value: str) -> str:
    from kgroups.config.authorizers import AUTHORIZER_CLASS_NAMES as CLASS_NAMES

    if value and value not in CLASS_NAMES:
        raise ValueError(f"unknown authorizer {value!r}: use one of {sorted(CLASS_NAMES)}")
    return value


def _listeners(value: str) -> str:
    for item in filter(None, (v.strip() for v in value.split(","))):
        parse_listener(item)
    return value.strip()


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL`` pairs, comma-separated."""
    out: dict[str, str] = {}
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or protocol.strip() not in SECURITY_PROTOCOLS:
            raise ValueError(f"{item!r} is not of the form NAME:{'|'.join(SECURITY_PROTOCOLS)}")
        out[name.strip()] = protocol.strip()
    return out


def _protocol_map(value: str) -> str:
    parse_protocol_map(value)
    return value.strip()


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    parse: Callable[[str], object]
    default: object
    doc: str
    minimum: int | None = None


_SETTINGS: tuple[Setting, ...] = (
    Setting("broker.id", _int, 0, "Id of this broker in metadata responses.", 0),
    Setting("node.id", _int, None, "Alias of broker.id (KRaft name)."),
    # Kafka's default is PLAINTEXT://:9092 (every interface); an unconfigured
    # broker here listens on loopback only, since nothing guards it.
    Setting("listeners", _listeners, "PLAINTEXT://127.0.0.1:9092", "Where the broker listens."),
    Setting("advertised.listeners", _listeners, None, "Address given to clients."),
    Setting(
        "sasl.enabled.mechanisms",
        sasl_mechanisms,
        "GSSAPI",
        "SASL mechanisms of SASL_* listeners (GSSAPI is accepted, not served).",
    ),
    Setting(
        "connection.failed.authentication.delay.ms",
        _int,
        100,
        "Delay before answering a failed authentication.",
        0,
    ),
    Setting("connections.max.reauth.ms", _int, 0, "SASL session lifetime; 0: no expiry.", 0),
    Setting(
        "listener.security.protocol.map",
        _protocol_map,
        DEFAULT_PROTOCOL_MAP,
        "Listener name to security protocol.",
    ),
    Setting(
        "inter.broker.listener.name",
        _str,
        None,
        "Listener whose address is the main one registered in the cluster store.",
    ),
    Setting(
        "security.inter.broker.protocol",
        _choice(*SECURITY_PROTOCOLS),
        "PLAINTEXT",
        "Protocol naming the registered listener when inter.broker.listener.name is unset.",
    ),
    Setting("ssl.keystore.type", _str, "JKS", "Key store format (PEM only)."),
    Setting("ssl.keystore.location", _str, None, "PEM file: private key and certificate chain."),
    Setting("ssl.keystore.password", _str, None, "Not used with PEM key stores."),
    Setting("ssl.key.password", _str, None, "Password of an encrypted private key."),
    Setting("ssl.keystore.key", _str, None, "Inline PEM private key."),
    Setting("ssl.keystore.certificate.chain", _str, None, "Inline PEM certificate chain."),
    Setting("ssl.truststore.type", _str, "JKS", "Trust store format (PEM only)."),
    Setting("ssl.truststore.location", _str, None, "PEM file of trusted CA certificates."),
    Setting("ssl.truststore.password", _str, None, "Not used with PEM trust stores."),
    Setting("ssl.truststore.certificates", _str, None, "Inline PEM trusted certificates."),
    Setting(
        "ssl.client.auth",
        _lower_choice("none", "requested", "required"),
        "none",
        "Ask SSL clients for a certificate.",
    ),
    Setting("ssl.enabled.protocols", tls_versions, "TLSv1.2,TLSv1.3", "TLS versions accepted."),
    Setting("ssl.protocol", _choice("TLSv1.2", "TLSv1.3", "TLS"), "TLSv1.3", "TLS protocol."),
    Setting("ssl.cipher.suites", _str, "", "OpenSSL cipher list for TLS 1.2 (empty: default)."),
    Setting(
        "ssl.principal.mapping.rules",
        _choice("DEFAULT"),
        "DEFAULT",
        "Certificate subject to principal (DEFAULT only).",
    ),
    Setting(
        "ssl.endpoint.identification.algorithm",
        _str,
        "https",
        "Accepted; the broker makes no outgoing TLS connection.",
    ),
    Setting("log.dirs", _str, "/tmp/kafka-logs", "Directory of the partition logs."),
    Setting("log.dir", _str, None, "Used when log.dirs is not set."),
    Setting("num.partitions", _int, 1, "Partitions of an auto-created topic.", 1),
    Setting("default.replication.factor", _int, 1, "Replication factor (1 only).", 1),
    Setting("auto.create.topics.enable", _bool, True, "Create topics on first use."),
    Setting("delete.topic.enable", _bool, True, "Allow DeleteTopics."),
    Setting(
        "authorizer.class.name",
        _authorizer,
        "",
        "ACL authorizer (Kafka's StandardAuthorizer or AclAuthorizer name); empty allows all.",
    ),
    Setting("super.users", _str, "", "Principals allowed everything, separated by ';'."),
    Setting(
        "allow.everyone.if.no.acl.found",
        _bool,
        False,
        "Allow access to resources that no ACL names.",
    ),
    Setting("socket.request.max.bytes", _int, 104857600, "Largest request accepted.", 1),
    Setting("message.max.bytes", _int, 1048588, "Largest record batch.", 0),
    Setting("fetch.max.bytes", _int, 57671680, "Largest fetch response.", 1024),
    Setting("connections.max.idle.ms", _int, 600000, "Close connections idle this long.", 1),
    Setting("max.connections", _int, INT_MAX, "Connections the broker accepts.", 0),
    Setting("max.connections.per.ip", _int, INT_MAX, "Connections from one address.", 0),
    Setting(
        "max.connections.per.ip.overrides",
        _ip_overrides,
        "",
        "Per-address caps, host:count,...",
    ),
    Setting("log.segment.bytes", _int, 1073741824, "Segment roll size.", 14),
    Setting("log.roll.ms", _int, None, "Segment roll age (ms)."),
    Setting("log.roll.hours", _int, 168, "Segment roll age (hours).", 1),
    Setting("log.retention.ms", _int, None, "Retention by age (ms; -1 unlimited)."),
    Setting("log.retention.minutes", _int, None, "Retention by age (minutes)."),
    Setting("log.retention.hours", _int, 168, "Retention by age (hours)."),
    Setting("log.retention.bytes", _int, -1, "Retention by size per partition."),
    Setting("log.retention.check.interval.ms", _int, 300000, "Retention check period.", 1),
    Setting("log.flush.interval.messages", _int, LONG_MAX, "fsync after this many.", 1),
    Setting("log.flush.interval.ms", _int, None, "fsync after this long (ms)."),
    Setting("log.flush.scheduler.interval.ms", _int, LONG_MAX, "Flush check period."),
    Setting(
        "log.flush.offset.checkpoint.interval.ms",
        _int,
        60000,
        "Recovery point checkpoint period.",
        1,
    ),
    Setting("log.index.interval.bytes", _int, 4096, "Bytes between index entries.", 0),
    Setting("log.index.size.max.bytes", _int, 10485760, "Index size bound.", 4),
    Setting(
        "log.cleanup.policy",
        _choice("delete", "compact", "compact,delete", "delete,compact"),
        "delete",
        "Default cleanup policy.",
    ),
    Setting(
        "log.message.timestamp.type",
        _choice("CreateTime", "LogAppendTime"),
        "CreateTime",
        "Timestamp kept in records.",
    ),
    Setting("log.cleaner.enable", _bool, True, "Run the log cleaner."),
    Setting("log.cleaner.backoff.ms", _int, 15000, "Pause between cleaning rounds.", 0),
    Setting("log.cleaner.delete.retention.ms", _int, 86400000, "Tombstone retention.", 0),
    Setting("offsets.topic.num.partitions", _int, 50, "__consumer_offsets partitions.", 1),
    Setting("offsets.topic.segment.bytes", _int, 104857600, "__consumer_offsets segment.", 1),
    Setting("offsets.retention.minutes", _int, 10080, "Committed offset retention.", 1),
    Setting("offsets.retention.check.interval.ms", _int, 600000, "Expiry check period.", 1),
    Setting("offset.metadata.max.bytes", _int, 4096, "Largest commit metadata.", 0),
    Setting("producer.id.expiration.ms", _int, 86400000, "Idle producer state kept.", 1),
    Setting(
        "transaction.partition.verification.enable",
        _bool,
        True,
        "Verify a transaction's first batch on a partition with its coordinator.",
    ),
    Setting(
        "producer.id.expiration.check.interval.ms",
        _int,
        600000,
        "Producer expiry check period.",
        1,
    ),
    Setting(
        "offsets.commit.timeout.ms", _int, 5000, "Wait for a coordinator append to be durable.", 1
    ),
    Setting("transaction.state.log.num.partitions", _int, 50, "__transaction_state partitions.", 1),
    Setting("transaction.max.timeout.ms", _int, 900000, "Largest transaction timeout.", 1),
    Setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _int,
        10000,
        "Check period for timed-out transactions.",
        1,
    ),
    Setting("transactional.id.expiration.ms", _int, 604800000, "Idle transactional id kept.", 1),
    Setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        _int,
        3600000,
        "Check period for expired transactional ids.",
        1,
    ),
    Setting("group.min.session.timeout.ms", _int, 6000, "Smallest session timeout.", 0),
    Setting("group.max.session.timeout.ms", _int, 1800000, "Largest session timeout.", 0),
    Setting("group.initial.rebalance.delay.ms", _int, 3000, "Delay of a first join.", 0),
    Setting("group.max.size", _int, INT_MAX, "Members per group.", 1),
    Setting(
        "group.coordinator.rebalance.protocols",
        _str,
        "classic,consumer",
        "Group protocols served: classic and/or consumer (KIP-848).",
    ),
    Setting("group.consumer.session.timeout.ms", _int, 45000, "Consumer group session.", 1),
    Setting("group.consumer.min.session.timeout.ms", _int, 45000, "Smallest of it.", 1),
    Setting("group.consumer.max.session.timeout.ms", _int, 60000, "Largest of it.", 1),
    Setting("group.consumer.heartbeat.interval.ms", _int, 5000, "Consumer heartbeat period.", 1),
    Setting("group.consumer.min.heartbeat.interval.ms", _int, 5000, "Smallest of it.", 1),
    Setting("group.consumer.max.heartbeat.interval.ms", _int, 15000, "Largest of it.", 1),
    Setting("group.consumer.max.size", _int, INT_MAX, "Members per consumer group.", 1),
    Setting("group.consumer.assignors", _str, "uniform,range", "Server-side assignors."),
    Setting(
        "group.consumer.regex.refresh.interval.ms",
        _int,
        600000,
        "Age at which a regex subscription is resolved again.",
        10000,
    ),
    Setting(
        "group.consumer.migration.policy",
        _lower_choice("disabled", "upgrade", "downgrade", "bidirectional"),
        "bidirectional",
        "Online conversion between classic and consumer groups.",
    ),
    Setting("cluster.store.url", _str, "", "PostgreSQL URL of the cluster (empty: one broker)."),
    Setting("broker.heartbeat.interval.ms", _int, 2000, "Cluster lease renewal period.", 1),
    Setting("broker.session.timeout.ms", _int, 9000, "Cluster lease lifetime.", 1),
    Setting("metrics.port", _int, -1, "Prometheus endpoint port (-1 off, 0 any free port).", -1),
    Setting(
        "fault.admin.port",
        _int,
        -1,
        "Fault injection HTTP endpoint port on 127.0.0.1, for tests (-1 off, 0 any free port).",
        -1,
    ),
)

SETTINGS: dict[str, Setting] = {s.key: s for s in _SETTINGS}

# Kafka's per-listener TLS keys (listener.name.<listener>.ssl.*) name these.
_LISTENER_SSL_KEYS = frozenset(key for key in SETTINGS if key.startswith("ssl."))

_REBALANCE_PROTOCOLS = frozenset({"classic", "consumer", "share", "streams"})

# Kafka keys a single-node kgroups broker accepts but has no use for.
NO_EFFECT = frozenset(
    {
        "num.network.threads",
        "num.io.threads",
        "num.recovery.threads.per.data.dir",
        "num.replica.fetchers",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "min.insync.replicas",
        "zookeeper.connect",
        "zookeeper.connection.timeout.ms",
        "process.roles",
        "controller.quorum.voters",
        "controller.listener.names",
        "unclean.leader.election.enable",
    }
)


def parse_listener(value: str) -> tuple[str, str, int]:
    """`NAME://host:port` -> (name, host, port); an empty host means all interfaces."""
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)://(\[[^\]]*\]|[^:]*):(\d+)", value.strip())
    if not m:
        raise ValueError(f"listener {value!r} is not of the form PLAINTEXT://host:port")
    name, host, port = m.group(1), m.group(2).strip("[]"), int(m.group(3))
    if not 0 <= port <= 65535:
        raise ValueError(f"listener port {port} is out of range")
    return name, host, port


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    protocol: str
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
    host: str
    port: int


def _items(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


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
        self._values: dict[str, object] = {s.key: s.default for s in _SETTINGS}
        self.ignored: list[str] = []
        self.tls = ListenerTls(self._values)
        self.listener_sasl = ListenerSasl()
        for key, raw in (props or {}).items():
            if key in NO_EFFECT:
                self.ignored.append(key)
                continue
            scoped = scoped_ssl_key(key) if key not in SETTINGS else None
            if scoped is not None and scoped[1] in _LISTENER_SSL_KEYS:
                listener, name = scoped
                self.tls.set(listener, name, _parse(SETTINGS[name], key, raw))
                continue
            setting = SETTINGS.get(key)
            if setting is None and self.listener_sasl.read(key, raw):
                continue
            if setting is None:
                raise ConfigError(f"unknown configuration key {key!r}")
            self._values[key] = _parse(setting, key, raw)
        self._check()

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
        # Kafka's share and streams groups are accepted and not served.
        if "classic" not in protocols or not protocols <= _REBALANCE_PROTOCOLS:
            raise ConfigError(
                "group.coordinator.rebalance.protocols must list classic, and may list consumer"
            )
        if self.get_int("default.replication.factor") != 1:
            raise ConfigError("default.replication.factor must be 1 on a single broker")
        self._check_listeners()

    def _check_listeners(self) -> None:
        specs = self.listener_specs()
        names = [spec.name for spec in specs]
        if not specs or len(set(names)) != len(names):
            raise ConfigError("listeners must name at least one listener, each once")
        if len({spec.port for spec in specs if spec.port}) != len([s for s in specs if s.port]):
            raise ConfigError("listeners must each use a port of their own")
        raw = self._values["advertised.listeners"]
        for item in _items(raw if isinstance(raw, str) else ""):
            name = parse_listener(item)[0]
            if name not in names:
                raise ConfigError(f"advertised.listeners names {name}, which is not a listener")
        inter = self._values["inter.broker.listener.name"]
        if isinstance(inter, str) and inter not in names:
            raise ConfigError(f"inter.broker.listener.name {inter} is not a listener")
        self.tls.check(names, (spec.name for spec in specs if spec.protocol.endswith("SSL")))
        self.listener_sasl.check({spec.name: spec.protocol for spec in specs})

    def listener_specs(self) -> list[ListenerSpec]:
        """Every listener, with its security protocol from the protocol map."""
        protocols = parse_protocol_map(self.get_str("listener.security.protocol.map"))
        specs = []
        for item in _items(self.get_str("listeners")):
            name, host, port = parse_listener(item)
            protocol = protocols.get(name)
            if protocol is None:
                raise ConfigError(
                    f"listener {name} has no security protocol in listener.security.protocol.map"
                )
            specs.append(ListenerSpec(name, protocol, host, port))
        return specs

    def advertised_addresses(self, bound: Mapping[str, int]) -> dict[str, tuple[str, int]]:
        """Per listener name, the (host, port) its clients are told: from
        advertised.listeners, else the listener's own (port 0: the bound one)."""
        raw = self._values["advertised.listeners"]
        given = {
            name: (host, port)
            for name, host, port in map(parse_listener, _items(raw if isinstance(raw, str) else ""))
        }
        out = {}
        for spec in self.listener_specs():
            host, port = given.get(spec.name, (spec.host, spec.port))
            out[spec.name] = (host or "localhost", port or bound.get(spec.name, 0))
        return out

    def inter_broker_listener(self) -> str:
        """The listener whose address is registered in the cluster store."""
        name = self._values["inter.broker.listener.name"]
        if isinstance(name, str):
            return name
        protocol = self.get_str("security.inter.broker.protocol")
        specs = self.listener_specs()
        return next((s.name for s in specs if s.protocol == protocol), specs[0].name)

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
