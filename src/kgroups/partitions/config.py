"""Per-topic log configuration with Kafka's topic-level names and broker defaults.

A topic's effective config is the broker defaults (``log.*`` keys in the broker's
properties) overlaid with the topic's own overrides (``segment.bytes`` ...), both
validated as Kafka's ConfigDef does: a bad value is INVALID_CONFIG naming the key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kgroups.config.config_types import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING, ConfigType
from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

__all__ = [
    "BROKER_CONFIG_KEYS",
    "BROKER_SYNONYMS",
    "TOPIC_CONFIG_KEYS",
    "ConfigPlan",
    "LogConfig",
    "topic_config_doc",
    "topic_config_kind",
]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_LONG_MIN = -(2**63)
_INT_MIN = -(2**31)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

# compression.type: Kafka's names of the codecs a topic may store batches in;
# "producer" keeps each batch as its producer compressed it.
PRODUCER = "producer"
CODECS = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

# Kafka's default dedupe buffer (128 MiB) holds about 5 million hashed keys; a
# dict holding the keys themselves spends ~150 bytes on each, so a million keys
# keep the cleaner near 150 MB. A log with more live keys takes several rounds.
DEFAULT_MAP_ENTRIES = 1_000_000


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    cleanup_policy: str = "delete"
    message_timestamp_type: str = CREATE_TIME
    max_message_bytes: int = 1048588
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    compression_type: str = PRODUCER
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    # Accepted, kept and described as Kafka's, with no effect here: a broker
    # has no replicas, no tiered storage, no preallocated or delayed-delete
    # segment files and no roll jitter (docs/configuration.md lists them).
    segment_jitter_ms: int = 0
    file_delete_delay_ms: int = 60000
    preallocate: bool = False
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    # Kafka 4.x keeps it as a no-op until 5.0: it never converts down either.
    message_downconversion_enable: bool = True
    # Topic-level names set explicitly (DescribeConfigs reports them as overrides).
    overridden: frozenset[str] = field(default=frozenset(), compare=False)
    # Derived flags, computed once: the append path reads them every time.
    compact: bool = field(init=False, repr=False, compare=False)
    delete: bool = field(init=False, repr=False, compare=False)
    log_append_time: bool = field(init=False, repr=False, compare=False)
    # The codec batches are stored in, with its level, or None to keep the
    # producer's (compression.type=producer, the default).
    recompress: tuple[int, int] | None = field(init=False, repr=False, compare=False)
    # A CreateTime topic with message.timestamp.before/after.max.ms set.
    timestamps_bounded: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        policies = self.cleanup_policy.split(",")
        object.__setattr__(self, "compact", "compact" in policies)
        object.__setattr__(self, "delete", "delete" in policies)
        object.__setattr__(self, "log_append_time", self.message_timestamp_type == LOG_APPEND_TIME)
        codec = CODECS.get(self.compression_type)
        levels = {
            GZIP: self.compression_gzip_level,
            LZ4: self.compression_lz4_level,
            ZSTD: self.compression_zstd_level,
        }
        recompress = None if codec is None else (codec, levels.get(codec, 0))
        object.__setattr__(self, "recompress", recompress)
        bounded = (
            self.message_timestamp_before_max_ms < LONG_MAX
            or self.message_timestamp_after_max_ms < LONG_MAX
        )
        object.__setattr__(self, "timestamps_bounded", bounded and not self.log_append_time)

    def with_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """This config (the broker defaults) with a topic's overrides applied.

        Unknown names and bad values raise INVALID_CONFIG, as CreateTopics and
        AlterConfigs answer in Kafka.
        """
        changes: dict[str, Any] = {}
        overridden = set(self.overridden)
        for name, raw in overrides.items():
            spec = _TOPIC_SPECS.get(name)
            if spec is None:
                raise KafkaError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
            changes[spec.attr] = spec.parse(name, raw)
            overridden.add(name)
        return dataclasses.replace(self, **changes, overridden=frozenset(overridden))

    def to_topic_configs(self) -> dict[str, str]:
        """Every topic-level name mapped to its value as Kafka prints it."""
        return {name: spec.format(getattr(self, spec.attr)) for name, spec in _TOPIC_SPECS.items()}

    @classmethod
    def from_broker_config(cls, props: Mapping[str, str]) -> LogConfig:
        """Broker-wide defaults from ``log.*`` properties (server.properties names).

        As in Kafka, ``log.roll.ms`` beats ``log.roll.hours`` and
        ``log.retention.ms`` beats ``.minutes`` beats ``.hours``.
        """
        changes: dict[str, Any] = {}
        for name, spec in _BROKER_SPECS.items():
            raw = props.get(name)
            if raw is not None:
                changes[spec.attr] = spec.parse(name, raw)
        for attr, chain in _BROKER_TIME_CHAINS.items():
            if attr in changes:
                continue
            for name, unit_ms, low in chain:
                raw = props.get(name)
                if raw is not None:
                    changes[attr] = _parse_int(name, raw, low, INT_MAX) * unit_ms
                    break
        retention = changes.get("retention_ms")
        if retention is not None and retention < 0:
            changes["retention_ms"] = -1
        return cls(**changes)


ConfigPlan = Callable[[Mapping[str, str]], tuple[dict[str, str], LogConfig]]
"""A topic's overrides now -> the overrides wanted and the log config they make
(or a KafkaError); run where the overrides are read, so that no concurrent
change is lost."""


class _Spec:
    """One config key: its type, what it does, and how its value parses,
    validates and prints."""

    def __init__(
        self,
        kind: ConfigType,
        doc: str,
        attr: str,
        parse: Callable[[str, str], Any],
        format: Callable[[Any], str] = str,
    ) -> None:
        self.kind = kind  # Kafka's type of the key, as DescribeConfigs reports it
        self.doc = doc
        self.attr = attr
        self.parse = parse
        self.format = format


def _bad(name: str, raw: str, why: str) -> KafkaError:
    return KafkaError(
        ErrorCode.invalid_config, f"Invalid value {raw} for configuration {name}: {why}"
    )


def _parse_int(name: str, raw: str, low: int, high: int) -> int:
    text = raw.strip()
    try:
        value = int(text, 10)
    except ValueError:
        raise _bad(name, raw, "Not a number") from None
    if not _LONG_MIN <= value <= LONG_MAX or (high <= INT_MAX and not _INT_MIN <= value <= high):
        raise _bad(name, raw, "Not a number of the expected type")
    if value < low:
        raise _bad(name, raw, f"Value must be at least {low}")
    if value > high:
        raise _bad(name, raw, f"Value must be no more than {high}")
    return value


def _long(low: int) -> Callable[[str, str], int]:
    return lambda name, raw: _parse_int(name, raw, low, LONG_MAX)


def _int(low: int) -> Callable[[str, str], int]:
    return lambda name, raw: _parse_int(name, raw, low, INT_MAX)


def _bounded(low: int, high: int) -> Callable[[str, str], int]:
    return lambda name, raw: _parse_int(name, raw, low, high)


def _ratio(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise _bad(name, raw, "Not a number") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise _bad(name, raw, "Value must be between 0 and 1")
    return value


def _cleanup_policy(name: str, raw: str) -> str:
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if not items:
        raise _bad(name, raw, "must be a list of compact and/or delete")
    for item in items:
        if item not in ("compact", "delete"):
            raise _bad(name, raw, f"String must be one of: compact, delete (got {item})")
    return ",".join(dict.fromkeys(items))


def _timestamp_type(name: str, raw: str) -> str:
    value = raw.strip()
    if value not in (CREATE_TIME, LOG_APPEND_TIME):
        raise _bad(name, raw, f"String must be one of: {CREATE_TIME}, {LOG_APPEND_TIME}")
    return value


def _boolean(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise _bad(name, raw, "Expected value to be either true or false")
    return value == "true"


def _format_boolean(value: bool) -> str:
    return "true" if value else "false"


def _compression_type(name: str, raw: str) -> str:
    value = raw.strip()  # case matters, as in Kafka's ValidString
    if value != PRODUCER and value not in CODECS:
        raise _bad(name, raw, f"String must be one of: {', '.join([*CODECS, PRODUCER])}")
    return value


def _gzip_level(name: str, raw: str) -> int:
    # zlib's levels, or -1: its default (6), as Kafka's Deflater.
    value = _parse_int(name, raw, -1, 9)
    if value == 0:
        raise _bad(name, raw, "Value must be between 1 and 9 or equal to -1")
    return value


def _throttled_replicas(name: str, raw: str) -> str:
    items = [item.strip() for item in raw.split(",")]
    if items == ["*"]:
        return "*"
    for item in items:
        partition, sep, broker = item.partition(":")
        if item and not (sep and partition.isdigit() and broker.isdigit()):
            raise _bad(
                name,
                raw,
                f"{name} must be the literal '*' or a list of replicas in the following "
                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
            )
    return ",".join(item for item in items if item)


def _remote_storage(name: str, raw: str) -> bool:
    if _boolean(name, raw):
        # As a Kafka broker with remote.log.storage.system.enable=false answers.
        raise _bad(name, raw, "Tiered Storage functionality is disabled in the broker.")
    return False


def _format_ratio(value: float) -> str:
    return repr(float(value))


_TOPIC_SPECS: dict[str, _Spec] = {
    # Kafka 3.x floors; 4.x raised segment.bytes to 1 MiB, small ones help tests.
    "segment.bytes": _Spec(
        INT, "Size at which the active segment is rolled.", "segment_bytes", _int(14)
    ),
    "segment.ms": _Spec(
        LONG, "Age at which the active segment is rolled (ms).", "segment_ms", _long(1)
    ),
    "retention.ms": _Spec(
        LONG, "How long records are kept (ms; -1 forever).", "retention_ms", _long(-1)
    ),
    "retention.bytes": _Spec(
        LONG,
        "Size a partition is trimmed to by deleting old segments (-1 unlimited).",
        "retention_bytes",
        _long(_LONG_MIN),
    ),
    "index.interval.bytes": _Spec(
        INT, "Bytes of records between offset index entries.", "index_interval_bytes", _int(0)
    ),
    "segment.index.bytes": _Spec(
        INT, "Size bound of a segment's offset and time indexes.", "segment_index_bytes", _int(4)
    ),
    "flush.messages": _Spec(LONG, "Records appended between fsyncs.", "flush_messages", _long(1)),
    "flush.ms": _Spec(LONG, "Time between fsyncs (ms).", "flush_ms", _long(0)),
    "cleanup.policy": _Spec(
        LIST,
        "delete drops old segments, compact keeps each key's latest record; or both.",
        "cleanup_policy",
        _cleanup_policy,
    ),
    "message.timestamp.type": _Spec(
        STRING,
        "CreateTime keeps the producer's timestamps, LogAppendTime stamps the append time.",
        "message_timestamp_type",
        _timestamp_type,
    ),
    "max.message.bytes": _Spec(INT, "Largest record batch accepted.", "max_message_bytes", _int(0)),
    "delete.retention.ms": _Spec(
        LONG, "How long a compacted topic keeps tombstones (ms).", "delete_retention_ms", _long(0)
    ),
    "min.cleanable.dirty.ratio": _Spec(
        DOUBLE,
        "Share of a log not yet cleaned that makes it worth cleaning.",
        "min_cleanable_dirty_ratio",
        _ratio,
        _format_ratio,
    ),
    "min.compaction.lag.ms": _Spec(
        LONG, "Age before a record may be compacted away (ms).", "min_compaction_lag_ms", _long(0)
    ),
    "max.compaction.lag.ms": _Spec(
        LONG,
        "Age by which a record is compacted whatever the ratio (ms).",
        "max_compaction_lag_ms",
        _long(1),
    ),
    "compression.type": _Spec(
        STRING,
        "Codec batches are stored in (producer: as each producer compressed it).",
        "compression_type",
        _compression_type,
    ),
    "compression.gzip.level": _Spec(
        INT, "gzip level of recompressed batches.", "compression_gzip_level", _gzip_level
    ),
    "compression.lz4.level": _Spec(
        INT, "lz4 level of recompressed batches.", "compression_lz4_level", _bounded(1, 17)
    ),
    "compression.zstd.level": _Spec(
        INT, "zstd level of recompressed batches.", "compression_zstd_level", _bounded(-131072, 22)
    ),
    "message.timestamp.before.max.ms": _Spec(
        LONG,
        "How far in the past a CreateTime record may be (ms).",
        "message_timestamp_before_max_ms",
        _long(0),
    ),
    "message.timestamp.after.max.ms": _Spec(
        LONG,
        "How far in the future a CreateTime record may be (ms).",
        "message_timestamp_after_max_ms",
        _long(0),
    ),
    "segment.jitter.ms": _Spec(
        LONG, "Random shortening of segment.ms (no effect).", "segment_jitter_ms", _long(0)
    ),
    "file.delete.delay.ms": _Spec(
        LONG,
        "Delay before a deleted segment's files go (no effect: they go at once).",
        "file_delete_delay_ms",
        _long(0),
    ),
    "preallocate": _Spec(
        BOOLEAN, "Preallocate segment files (no effect).", "preallocate", _boolean, _format_boolean
    ),
    "min.insync.replicas": _Spec(
        INT,
        "Replicas that must have an acks=all batch (no effect: one replica).",
        "min_insync_replicas",
        _int(1),
    ),
    "unclean.leader.election.enable": _Spec(
        BOOLEAN,
        "Let a replica that is behind lead (no effect: one replica).",
        "unclean_leader_election_enable",
        _boolean,
        _format_boolean,
    ),
    "leader.replication.throttled.replicas": _Spec(
        LIST,
        "Replicas throttled on the leader's side (no effect).",
        "leader_replication_throttled_replicas",
        _throttled_replicas,
    ),
    "follower.replication.throttled.replicas": _Spec(
        LIST,
        "Replicas throttled on the follower's side (no effect).",
        "follower_replication_throttled_replicas",
        _throttled_replicas,
    ),
    "remote.storage.enable": _Spec(
        BOOLEAN,
        "Tiered storage (refused: not served).",
        "remote_storage_enable",
        _remote_storage,
        _format_boolean,
    ),
    "local.retention.ms": _Spec(
        LONG, "Tiered storage's local retention (no effect).", "local_retention_ms", _long(-2)
    ),
    "local.retention.bytes": _Spec(
        LONG, "Tiered storage's local retention (no effect).", "local_retention_bytes", _long(-2)
    ),
    "remote.log.copy.disable": _Spec(
        BOOLEAN,
        "Stop copying to tiered storage (no effect).",
        "remote_log_copy_disable",
        _boolean,
        _format_boolean,
    ),
    "remote.log.delete.on.disable": _Spec(
        BOOLEAN,
        "Delete tiered segments when tiering stops (no effect).",
        "remote_log_delete_on_disable",
        _boolean,
        _format_boolean,
    ),
    "message.downconversion.enable": _Spec(
        BOOLEAN,
        "Down-conversion for old fetchers (no effect: none, as in Kafka 4).",
        "message_downconversion_enable",
        _boolean,
        _format_boolean,
    ),
}

_BROKER_SPECS: dict[str, _Spec] = {
    "log.segment.bytes": _TOPIC_SPECS["segment.bytes"],
    "log.roll.ms": _TOPIC_SPECS["segment.ms"],
    "log.retention.ms": _Spec(
        LONG, "Retention by age (ms; negative: unlimited).", "retention_ms", _long(_LONG_MIN)
    ),
    "log.retention.bytes": _TOPIC_SPECS["retention.bytes"],
    "log.index.interval.bytes": _TOPIC_SPECS["index.interval.bytes"],
    "log.index.size.max.bytes": _TOPIC_SPECS["segment.index.bytes"],
    "log.flush.interval.messages": _TOPIC_SPECS["flush.messages"],
    "log.flush.interval.ms": _TOPIC_SPECS["flush.ms"],
    "log.cleanup.policy": _TOPIC_SPECS["cleanup.policy"],
    "log.message.timestamp.type": _TOPIC_SPECS["message.timestamp.type"],
    "message.max.bytes": _TOPIC_SPECS["max.message.bytes"],
    "log.cleaner.delete.retention.ms": _TOPIC_SPECS["delete.retention.ms"],
    "log.cleaner.min.cleanable.ratio": _TOPIC_SPECS["min.cleanable.dirty.ratio"],
    "log.cleaner.min.compaction.lag.ms": _TOPIC_SPECS["min.compaction.lag.ms"],
    "log.cleaner.max.compaction.lag.ms": _TOPIC_SPECS["max.compaction.lag.ms"],
    "compression.type": _TOPIC_SPECS["compression.type"],
    "compression.gzip.level": _TOPIC_SPECS["compression.gzip.level"],
    "compression.lz4.level": _TOPIC_SPECS["compression.lz4.level"],
    "compression.zstd.level": _TOPIC_SPECS["compression.zstd.level"],
    "log.message.timestamp.before.max.ms": _TOPIC_SPECS["message.timestamp.before.max.ms"],
    "log.message.timestamp.after.max.ms": _TOPIC_SPECS["message.timestamp.after.max.ms"],
    "log.roll.jitter.ms": _TOPIC_SPECS["segment.jitter.ms"],
    "log.segment.delete.delay.ms": _TOPIC_SPECS["file.delete.delay.ms"],
    "log.preallocate": _TOPIC_SPECS["preallocate"],
    "min.insync.replicas": _TOPIC_SPECS["min.insync.replicas"],
    "unclean.leader.election.enable": _TOPIC_SPECS["unclean.leader.election.enable"],
    "log.local.retention.ms": _TOPIC_SPECS["local.retention.ms"],
    "log.local.retention.bytes": _TOPIC_SPECS["local.retention.bytes"],
    "log.message.downconversion.enable": _TOPIC_SPECS["message.downconversion.enable"],
}

# Coarser-unit fallbacks, tried in order when the ms key is absent.
# (name, unit in ms, lowest value); -1 retention means unlimited.
_BROKER_TIME_CHAINS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "segment_ms": (("log.roll.hours", 3_600_000, 1),),
    "segment_jitter_ms": (("log.roll.jitter.hours", 3_600_000, 0),),
    "retention_ms": (
        ("log.retention.minutes", 60_000, -1),
        ("log.retention.hours", 3_600_000, -1),
    ),
}

TOPIC_CONFIG_KEYS: frozenset[str] = frozenset(_TOPIC_SPECS)
BROKER_CONFIG_KEYS: frozenset[str] = frozenset(_BROKER_SPECS) | frozenset(
    name for chain in _BROKER_TIME_CHAINS.values() for name, _, _ in chain
)
# Each topic-level name's broker synonyms, in Kafka's order of precedence
# (DescribeConfigs lists them when asked).
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    topic_name: tuple(
        [name for name, spec in _BROKER_SPECS.items() if spec.attr == topic_spec.attr]
        + [name for name, _, _ in _BROKER_TIME_CHAINS.get(topic_spec.attr, ())]
    )
    for topic_name, topic_spec in _TOPIC_SPECS.items()
}


def topic_config_kind(name: str) -> ConfigType:
    """Kafka's type of topic config `name` (LogConfig's), for DescribeConfigs."""
    return _TOPIC_SPECS[name].kind


def topic_config_doc(name: str) -> str:
    """What topic config `name` does, for DescribeConfigs' documentation."""
    return _TOPIC_SPECS[name].doc
