"""The share consumer's configuration: the keys and defaults of Kafka 4.2's
KafkaShareConsumer.

A share consumer always has a group (``group.id`` is required), never commits
offsets and never chooses where to start: the share group's
``share.auto.offset.reset`` says that, on the broker. Its one choice of its
own is ``share.acknowledgement.mode``: ``implicit`` (every record a poll
returned is accepted at the next poll or commit) or ``explicit`` (the
application acknowledges each record).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.client.config_schema import ConfigError, Setting, as_bool, as_int, as_str, resolve
from kgroups.client.security import SETTINGS as SECURITY_SETTINGS
from kgroups.client.security import UNSUPPORTED as SECURITY_UNSUPPORTED
from kgroups.client.security import ClientSecurity

__all__ = ["ShareConsumerConfig"]

SETTINGS = (
    Setting("bootstrap.servers", as_str, None),
    Setting("client.id", as_str, ""),
    Setting("client.rack", as_str, ""),
    Setting("group.id", as_str, ""),
    Setting("share.acknowledgement.mode", as_str, "implicit", choices=("implicit", "explicit")),
    Setting(
        "share.acquire.mode",
        as_str,
        "batch_optimized",
        choices=("batch_optimized", "record_limit"),
    ),
    Setting("max.poll.records", as_int, 500, minimum=1),
    Setting("fetch.min.bytes", as_int, 1, minimum=0),
    Setting("fetch.max.bytes", as_int, 52428800, minimum=0),
    Setting("fetch.max.wait.ms", as_int, 500, minimum=0),
    Setting("check.crcs", as_bool, True),
    Setting("retry.backoff.ms", as_int, 100, minimum=0),
    Setting("request.timeout.ms", as_int, 30000, minimum=0),
    Setting("default.api.timeout.ms", as_int, 60000, minimum=0),
    Setting("metadata.max.age.ms", as_int, 300000, minimum=0),
    *SECURITY_SETTINGS,
)

UNSUPPORTED = {
    **SECURITY_UNSUPPORTED,
    "key.deserializer": "records carry bytes; decode them in your code",
    "value.deserializer": "records carry bytes; decode them in your code",
    "group.instance.id": "share groups have no static members",
    "enable.auto.commit": "a share consumer acknowledges records instead of committing offsets",
    "auto.offset.reset": "a share group starts where its share.auto.offset.reset says",
    "isolation.level": "a share group reads as its share.isolation.level says",
    "session.timeout.ms": "the broker owns it (group.share.session.timeout.ms)",
    "heartbeat.interval.ms": "the broker owns it (group.share.heartbeat.interval.ms)",
    "partition.assignment.strategy": "the broker assigns share group partitions",
}

_client_numbers = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ShareConsumerConfig:
    bootstrap_servers: str
    client_id: str
    security: ClientSecurity
    client_rack: str | None
    group_id: str
    explicit_acknowledgement: bool
    record_limit: bool
    """share.acquire.mode=record_limit: a poll never acquires more than max.poll.records."""
    max_poll_records: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    fetch_max_wait_ms: int
    check_crcs: bool
    retry_backoff_ms: int
    request_timeout_ms: int
    default_api_timeout_ms: int
    metadata_max_age_ms: int

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> ShareConsumerConfig:
        values, given = resolve("share consumer", SETTINGS, raw, UNSUPPORTED)
        if not values["bootstrap.servers"]:
            raise ConfigError("bootstrap.servers is required")
        if not values["group.id"]:
            raise ConfigError("a share consumer needs a group.id")
        client_id = values["client.id"] or f"kgroups-share-consumer-{next(_client_numbers)}"
        return cls(
            bootstrap_servers=values["bootstrap.servers"],
            client_id=client_id,
            security=ClientSecurity.from_values(values, given),
            client_rack=values["client.rack"] or None,
            group_id=values["group.id"],
            explicit_acknowledgement=values["share.acknowledgement.mode"] == "explicit",
            record_limit=values["share.acquire.mode"] == "record_limit",
            max_poll_records=values["max.poll.records"],
            fetch_min_bytes=values["fetch.min.bytes"],
            fetch_max_bytes=values["fetch.max.bytes"],
            fetch_max_wait_ms=values["fetch.max.wait.ms"],
            check_crcs=values["check.crcs"],
            retry_backoff_ms=values["retry.backoff.ms"],
            request_timeout_ms=values["request.timeout.ms"],
            default_api_timeout_ms=values["default.api.timeout.ms"],
            metadata_max_age_ms=values["metadata.max.age.ms"],
        )
