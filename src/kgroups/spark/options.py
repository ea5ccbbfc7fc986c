"""The data source's options, under the names of Spark's own Kafka source.

Spark hands options over case-insensitively (lower-cased keys), so lookups here
are by lower-cased name while messages use the documented spelling. Every
problem is an ``OptionError`` whose message starts with the option's name, so a
user sees which option to fix however deep in a Spark stack trace it surfaces.
Options under ``kafka.`` go to the client (consumer keys for reading, producer
keys for writing) and are checked by the client's own configuration schema;
among them the security keys (``kafka.security.protocol``, ``kafka.ssl.*``,
``kafka.sasl.*``) reach every connection of the driver and the executors.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kgroups.client.config_schema import ConfigError
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.security import SETTINGS as SECURITY_SETTINGS
from kgroups.client.security import UNSUPPORTED as SECURITY_UNSUPPORTED
from kgroups.spark.offset_spec import OffsetSpec, parse_offset_spec

__all__ = ["OptionError", "ReadOptions", "TopicSelection", "WriteOptions"]


class OptionError(ValueError):
    """An option of the kgroups data source that cannot work; names the option."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"option '{option}': {problem}")
        self.option = option


# Options a read understands besides kafka.*; anything else is a typo worth reporting.
_READ_OPTIONS = {
    "kafka.bootstrap.servers",
    "bootstrap.servers",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "endingtimestamp",
    "maxoffsetspertrigger",
    "minpartitions",
    "maxrecordsperpartition",
    "includeheaders",
    "failondataloss",
    "group.id",
    "indexonly",
}
# Spark hands these to every source and sink; they mean nothing here.
_SPARK_OPTIONS = {"path", "paths", "checkpointlocation", "queryname"}
_WRITE_OPTIONS = {
    "kafka.bootstrap.servers",
    "bootstrap.servers",
    "topic",
    "kgroups.transactional",
    "kgroups.transactional.id.prefix",
}
# Kafka-source options of Spark's that this source does not offer, with why.
_NOT_OFFERED = {
    "kafka.group.id": "the source reads without a consumer group; use 'group.id' to commit "
    "the stream's progress to a group",
    "groupidprefix": "the source reads without a consumer group",
    "startingoffsetsbytimestamp": "use 'startingTimestamp' or per-partition 'startingOffsets'",
    "endingoffsetsbytimestamp": "use 'endingTimestamp' or per-partition 'endingOffsets'",
    "kafkaconsumer.polltimeoutms": "set 'kafka.request.timeout.ms' instead",
}
_CONSUMER_KEYS_OWNED = {"bootstrap.servers", "group.id", "enable.auto.commit"}


@dataclass(frozen=True, slots=True)
class TopicSelection:
    """Which partitions to read: exactly one of subscribe, subscribePattern, assign."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()

    def describe(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern {self.pattern!r}"
        if self.assigned:
            return "assign " + ", ".join(f"{t}-{p}" for t, p in self.assigned)
        return "subscribe " + ",".join(self.topics)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    bootstrap: str
    selection: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    max_records_per_partition: int | None
    include_headers: bool
    fail_on_data_loss: bool
    group_id: str | None
    index_only: bool
    consumer: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a password
    """The kafka.* options without their prefix, as checked consumer settings."""

    @property
    def security_keys(self) -> dict[str, str]:
        return _security_keys(self.consumer)

    @property
    def read_committed(self) -> bool:
        return self.consumer.get("isolation.level") == "read_committed"

    def consumer_config(self) -> ConsumerConfig:
        return ConsumerConfig.from_dict({"bootstrap.servers": self.bootstrap, **self.consumer})

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
        opts = {k.lower(): v for k, v in options.items()}
        _check_names(opts, _READ_OPTIONS)
        bootstrap = _bootstrap(opts)
        selection = _selection(opts)
        starting = _offsets(opts, "startingOffsets", "startingTimestamp", streaming)
        if streaming:
            for name in ("endingOffsets", "endingTimestamp"):
                if name.lower() in opts:
                    raise OptionError(name, "is for batch queries; a stream has no end")
            ending = OffsetSpec.latest()
        else:
            if starting.kind == "latest":
                raise OptionError(
                    "startingOffsets",
                    "'latest' is for streaming queries; a batch reads from "
                    "'earliest', a timestamp or per-partition offsets",
                )
            ending = _offsets(opts, "endingOffsets", "endingTimestamp", streaming)
            if ending.kind == "earliest":
                raise OptionError("endingOffsets", "'earliest' would read nothing")
            if any(o == -2 for o in ending.partitions.values()):
                raise OptionError("endingOffsets", "-2 (earliest) is not a valid end offset")
        consumer = _kafka_settings(opts)
        for key in _CONSUMER_KEYS_OWNED & consumer.keys():
            raise OptionError(f"kafka.{key}", "is set by the data source itself")
        _check_client_config(ConsumerConfig.from_dict, bootstrap, consumer)
        group_id = opts.get("group.id")
        if group_id is not None and not group_id.strip():
            raise OptionError("group.id", "must not be empty")
        if group_id is not None and not streaming:
            raise OptionError("group.id", "is for streaming queries, which commit their progress")
        return cls(
            bootstrap=bootstrap,
            selection=selection,
            starting=starting,
            ending=ending,
            max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
            min_partitions=_positive(opts, "minPartitions"),
            max_records_per_partition=_positive(opts, "maxRecordsPerPartition"),
            include_headers=_bool(opts, "includeHeaders", False),
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            group_id=group_id,
            index_only=_bool(opts, "indexOnly", False),
            consumer=consumer,
        )


@dataclass(frozen=True, slots=True)
class WriteOptions:
    bootstrap: str
    topic: str | None
    producer: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a password
    transactional_id_prefix: str | None = None
    """Set when each task writes in a transaction (kgroups.transactional): the
    task's transactional.id is this prefix and its partition number."""

    @property
    def security_keys(self) -> dict[str, str]:
        return _security_keys(self.producer)

    def producer_config(self) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap, **self.producer}

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        opts = {k.lower(): v for k, v in options.items()}
        read_only = (_READ_OPTIONS - _WRITE_OPTIONS) & opts.keys()
        for name in sorted(read_only):
            raise OptionError(_spelling(name), "is a read option; a write does not take it")
        _check_names(opts, _WRITE_OPTIONS)
        bootstrap = _bootstrap(opts)
        producer = _kafka_settings(opts)
        _check_client_config(ProducerConfig.from_dict, bootstrap, producer)
        topic = opts.get("topic")
        if topic is not None and not topic.strip():
            raise OptionError("topic", "must not be empty")
        if "transactional.id" in producer:
            raise OptionError(
                "kafka.transactional.id",
                "is made per task; set kgroups.transactional (and its id prefix) instead",
            )
        prefix = None
        if _bool(opts, "kgroups.transactional", False):
            # Made once, on the driver: every task and every retry of it shares it.
            prefix = opts.get("kgroups.transactional.id.prefix") or (
                f"kgroups-spark-{uuid.uuid4().hex[:12]}"
            )
        elif "kgroups.transactional.id.prefix" in opts:
            raise OptionError("kgroups.transactional.id.prefix", "needs kgroups.transactional=true")
        return cls(
            bootstrap=bootstrap, topic=topic, producer=producer, transactional_id_prefix=prefix
        )


_SPELLINGS = {
    name.lower(): name
    for name in (
        "subscribePattern",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "maxOffsetsPerTrigger",
        "minPartitions",
        "maxRecordsPerPartition",
        "includeHeaders",
        "failOnDataLoss",
        "indexOnly",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "groupIdPrefix",
        "kafkaConsumer.pollTimeoutMs",
    )
}


def _kafka_settings(opts: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without the prefix, for the data source's client
    (bootstrap.servers apart: see _bootstrap)."""
    settings = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    settings.pop("bootstrap.servers", None)
    return settings


_SECURITY_KEYS = {s.name for s in SECURITY_SETTINGS} | SECURITY_UNSUPPORTED.keys()


def _security_keys(settings: Mapping[str, str]) -> dict[str, str]:
    """security.protocol, ssl.*, sasl.* among the client settings: what the data
    source's own cluster calls connect with (already checked with the rest)."""
    return {k: v for k, v in settings.items() if k in _SECURITY_KEYS}


def _check_client_config(
    from_dict: Callable[[Mapping[str, object]], object], bootstrap: str, settings: dict[str, str]
) -> None:
    """Reject now, naming the option, what the client would reject on an executor."""
    try:
        from_dict({"bootstrap.servers": bootstrap, **settings})
    except (ConfigError, ValueError) as e:
        raise OptionError("kafka.*", str(e)) from None


def _spelling(name: str) -> str:
    return _SPELLINGS.get(name, name)


def _check_names(opts: Mapping[str, str], known: set[str]) -> None:
    for name in sorted(opts):
        if name in _NOT_OFFERED:
            raise OptionError(_spelling(name), _NOT_OFFERED[name])
        if name in known or name in _SPARK_OPTIONS or name.startswith("kafka."):
            continue
        import difflib

        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean '{_spelling(close[0])}'?" if close else ""
        raise OptionError(name, f"is not an option of the kgroups data source{hint}")


def _bootstrap(opts: Mapping[str, str]) -> str:
    value = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
    if not value or not value.strip():
        raise OptionError("kafka.bootstrap.servers", "is required (host:port[,host:port...])")
    for item in value.split(","):
        _host, sep, port = item.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise OptionError("kafka.bootstrap.servers", f"{item.strip()!r} is not host:port")
    return value.strip()


def _selection(opts: Mapping[str, str]) -> TopicSelection:
    given = [name for name in ("subscribe", "subscribepattern", "assign") if name in opts]
    if len(given) != 1:
        what = "none was" if not given else " and ".join(map(_spelling, given)) + " were"
        raise OptionError(
            "subscribe",
            f"exactly one of subscribe, subscribePattern, assign is needed; {what} given",
        )
    name = given[0]
    value = opts[name]
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe", "names no topic")
        return TopicSelection(topics=topics)
    if name == "subscribepattern":
        try:
            re.compile(value)
        except re.error as e:
            raise OptionError(
                "subscribePattern", f"{value!r} is not a regular expression: {e}"
            ) from None
        return TopicSelection(pattern=value)
    try:
        raw = json.loads(value)
        assigned = tuple(
            sorted((str(t), int(p)) for t, ps in raw.items() for p in ps if int(p) >= 0)
        )
    except (ValueError, TypeError, AttributeError):
        raise OptionError(
            "assign", f'{value!r} is not JSON like {{"topicA":[0,1],"topicB":[2,4]}}'
        ) from None
    if not assigned:
        raise OptionError("assign", "names no partition")
    return TopicSelection(assigned=assigned)


def _offsets(
    opts: Mapping[str, str], offsets_name: str, timestamp_name: str, streaming: bool
) -> OffsetSpec:
    offsets = opts.get(offsets_name.lower())
    timestamp = opts.get(timestamp_name.lower())
    if offsets is not None and timestamp is not None:
        raise OptionError(timestamp_name, f"cannot be given together with '{offsets_name}'")
    if timestamp is not None:
        if not timestamp.strip().isdigit():
            raise OptionError(timestamp_name, f"{timestamp!r} is not milliseconds since the epoch")
        return OffsetSpec.at_time(int(timestamp))
    if offsets is None:
        starting = offsets_name == "startingOffsets"
        return OffsetSpec.latest() if streaming or not starting else OffsetSpec.earliest()
    try:
        return parse_offset_spec(offsets)
    except ValueError as e:
        raise OptionError(offsets_name, str(e)) from None


def _positive(opts: Mapping[str, str], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None:
        return None
    if not value.strip().isdigit() or int(value) <= 0:
        raise OptionError(name, f"{value!r} is not a positive integer")
    return int(value)


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise OptionError(name, f"{value!r} is not true or false")
    return text == "true"
