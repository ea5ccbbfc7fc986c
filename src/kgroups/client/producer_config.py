"""The producer's configuration: the Java producer's keys and defaults.

Defaults are Kafka 3.x's (acks=all and enable.idempotence=true since 3.0),
except linger.ms, which is 5 as in Kafka 4.0 (KIP-1030): a few milliseconds of
batching costs little latency and buys much throughput.

Idempotence needs acks=all, retries and at most 5 requests in flight. As in
the Java client, asking for idempotence explicitly together with a conflicting
setting is an error, while the default idempotence quietly steps aside.
A transactional.id implies idempotence, and so makes such settings an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.client.config_schema import ConfigError, Setting, as_bool, as_int, as_str, resolve
from kgroups.client.security import SETTINGS as SECURITY_SETTINGS
from kgroups.client.security import UNSUPPORTED as SECURITY_UNSUPPORTED
from kgroups.client.security import ClientSecurity
from kgroups.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

__all__ = ["ProducerConfig"]

COMPRESSION = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
_MAX_IDEMPOTENT_IN_FLIGHT = 5


def _acks(value: object) -> int:
    text = str(value).strip().lower()
    if text in ("all", "-1"):
        return -1
    if text in ("0", "1"):
        return int(text)
    raise ValueError("expected all, -1, 0 or 1")


SETTINGS = (
    Setting("bootstrap.servers", as_str, None),
    Setting("client.id", as_str, ""),
    Setting("acks", _acks, -1),
    Setting("linger.ms", as_int, 5, minimum=0),
    Setting("batch.size", as_int, 16384, minimum=0),
    Setting("compression.type", as_str, "none", choices=tuple(COMPRESSION)),
    Setting("enable.idempotence", as_bool, True),
    Setting("max.in.flight.requests.per.connection", as_int, 5, minimum=1),
    Setting("retries", as_int, 2147483647, minimum=0),
    Setting("retry.backoff.ms", as_int, 100, minimum=0),
    Setting("request.timeout.ms", as_int, 30000, minimum=0),
    Setting("delivery.timeout.ms", as_int, 120000, minimum=0),
    Setting("max.request.size", as_int, 1048576, minimum=1),
    Setting("buffer.memory", as_int, 33554432, minimum=0),
    Setting("max.block.ms", as_int, 60000, minimum=0),
    Setting("metadata.max.age.ms", as_int, 300000, minimum=0),
    Setting("partitioner.ignore.keys", as_bool, False),
    Setting("transactional.id", as_str, ""),
    Setting("transaction.timeout.ms", as_int, 60000, minimum=1),
    *SECURITY_SETTINGS,
)

UNSUPPORTED = {
    **SECURITY_UNSUPPORTED,
    "key.serializer": "send() takes bytes; encode them in your code",
    "value.serializer": "send() takes bytes; encode them in your code",
    "partitioner.class": "partitioning is the Java default (murmur2 keys, sticky otherwise)",
    "interceptor.classes": "there are no interceptors",
}

_client_numbers = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    bootstrap_servers: str
    client_id: str
    security: ClientSecurity
    acks: int
    linger_ms: int
    batch_size: int
    compression: int
    enable_idempotence: bool
    max_in_flight: int
    retries: int
    retry_backoff_ms: int
    request_timeout_ms: int
    delivery_timeout_ms: int
    max_request_size: int
    buffer_memory: int
    max_block_ms: int
    metadata_max_age_ms: int
    partitioner_ignore_keys: bool
    transactional_id: str | None
    transaction_timeout_ms: int

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> ProducerConfig:
        values, given = resolve("producer", SETTINGS, raw, UNSUPPORTED)
        if not values["bootstrap.servers"]:
            raise ConfigError("bootstrap.servers is required")
        idempotence = values["enable.idempotence"]
        conflicts = []
        if values["acks"] != -1:
            conflicts.append("acks must be all")
        if values["retries"] == 0:
            conflicts.append("retries must be above 0")
        if values["max.in.flight.requests.per.connection"] > _MAX_IDEMPOTENT_IN_FLIGHT:
            conflicts.append("max.in.flight.requests.per.connection must be at most 5")
        transactional_id = values["transactional.id"] or None
        if transactional_id is not None and not idempotence:
            raise ConfigError("transactional.id needs enable.idempotence=true")
        if idempotence and conflicts:
            if "enable.idempotence" in given or transactional_id is not None:
                raise ConfigError("enable.idempotence=true but " + "; ".join(conflicts))
            idempotence = False
        if values["delivery.timeout.ms"] < values["linger.ms"] + values["request.timeout.ms"]:
            raise ConfigError("delivery.timeout.ms must be at least linger.ms + request.timeout.ms")
        return cls(
            bootstrap_servers=values["bootstrap.servers"],
            security=ClientSecurity.from_values(values, given),
            client_id=values["client.id"] or f"kgroups-producer-{next(_client_numbers)}",
            acks=values["acks"],
            linger_ms=values["linger.ms"],
            batch_size=values["batch.size"],
            compression=COMPRESSION[values["compression.type"]],
            enable_idempotence=idempotence,
            max_in_flight=values["max.in.flight.requests.per.connection"],
            retries=values["retries"],
            retry_backoff_ms=values["retry.backoff.ms"],
            request_timeout_ms=values["request.timeout.ms"],
            delivery_timeout_ms=values["delivery.timeout.ms"],
            max_request_size=values["max.request.size"],
            buffer_memory=values["buffer.memory"],
            max_block_ms=values["max.block.ms"],
            metadata_max_age_ms=values["metadata.max.age.ms"],
            partitioner_ignore_keys=values["partitioner.ignore.keys"],
            transactional_id=transactional_id,
            transaction_timeout_ms=values["transaction.timeout.ms"],
        )
