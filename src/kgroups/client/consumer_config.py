"""The consumer's configuration: the Java consumer's keys and defaults (Kafka 3.x).

``rebalance timeout``, which a member sends in JoinGroup, is not a key of its
own: like the Java client we send ``max.poll.interval.ms``, the longest a member
may take between polls and so the longest the group waits for it to rejoin.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from kgroups.client.assignor_choice import protocol_name
from kgroups.client.config_schema import (
    ConfigError,
    Setting,
    as_bool,
    as_int,
    as_list,
    as_str,
    resolve,
)
from kgroups.client.security import SETTINGS as SECURITY_SETTINGS
from kgroups.client.security import UNSUPPORTED as SECURITY_UNSUPPORTED
from kgroups.client.security import ClientSecurity

__all__ = ["ConsumerConfig"]

_MAX_INT = 2**31 - 1


def _optional_str(value: object) -> str | None:
    return None if value is None else as_str(value)


def _protocol(value: object) -> str:
    return as_str(value).lower()


def _strategies(value: object) -> tuple[str, ...]:
    names = tuple(protocol_name(v) for v in as_list(value))
    if not names:
        raise ValueError("at least one partition assignment strategy is needed")
    return names


SETTINGS = (
    Setting("bootstrap.servers", as_str, None),
    Setting("client.id", as_str, ""),
    Setting("client.rack", as_str, ""),
    Setting("group.id", _optional_str, None),
    Setting("group.instance.id", _optional_str, None),
    Setting("group.protocol", _protocol, "classic", choices=("classic", "consumer")),
    Setting("group.remote.assignor", _optional_str, None),
    Setting("session.timeout.ms", as_int, 45000, minimum=1),
    Setting("heartbeat.interval.ms", as_int, 3000, minimum=1),
    Setting("max.poll.interval.ms", as_int, 300000, minimum=1),
    Setting("max.poll.records", as_int, 500, minimum=1),
    Setting("enable.auto.commit", as_bool, True),
    Setting("auto.commit.interval.ms", as_int, 5000, minimum=0),
    Setting("auto.offset.reset", as_str, "latest", choices=("earliest", "latest", "none")),
    Setting("partition.assignment.strategy", _strategies, ("range", "cooperative-sticky")),
    Setting("fetch.min.bytes", as_int, 1, minimum=0),
    Setting("fetch.max.bytes", as_int, 52428800, minimum=0),
    Setting("fetch.max.wait.ms", as_int, 500, minimum=0),
    Setting("max.partition.fetch.bytes", as_int, 1048576, minimum=0),
    Setting(
        "isolation.level",
        as_str,
        "read_uncommitted",
        choices=("read_uncommitted", "read_committed"),
    ),
    Setting("check.crcs", as_bool, True),
    Setting("retry.backoff.ms", as_int, 100, minimum=0),
    Setting("request.timeout.ms", as_int, 30000, minimum=0),
    Setting("default.api.timeout.ms", as_int, 60000, minimum=0),
    Setting("metadata.max.age.ms", as_int, 300000, minimum=0),
    Setting("allow.auto.create.topics", as_bool, True),
    Setting("exclude.internal.topics", as_bool, True),
    *SECURITY_SETTINGS,
)

UNSUPPORTED = {
    **SECURITY_UNSUPPORTED,
    "key.deserializer": "records carry bytes; decode them in your code",
    "value.deserializer": "records carry bytes; decode them in your code",
    "interceptor.classes": "there are no interceptors",
}

CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")
"""Under group.protocol=consumer the broker owns these (KIP-848): setting one is an error."""

_client_numbers = itertools.count(1)


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    bootstrap_servers: str
    client_id: str
    security: ClientSecurity
    client_rack: str | None
    group_id: str | None
    group_instance_id: str | None
    group_protocol: str
    group_remote_assignor: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    max_poll_records: int
    enable_auto_commit: bool
    auto_commit_interval_ms: int
    auto_offset_reset: str
    partition_assignment_strategy: tuple[str, ...]
    fetch_min_bytes: int
    fetch_max_bytes: int
    fetch_max_wait_ms: int
    max_partition_fetch_bytes: int
    isolation_level: str
    check_crcs: bool
    retry_backoff_ms: int
    request_timeout_ms: int
    default_api_timeout_ms: int
    metadata_max_age_ms: int
    allow_auto_create_topics: bool
    exclude_internal_topics: bool

    @property
    def rebalance_timeout_ms(self) -> int:
        return self.max_poll_interval_ms

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> ConsumerConfig:
        values, given = resolve("consumer", SETTINGS, raw, UNSUPPORTED)
        if not values["bootstrap.servers"]:
            raise ConfigError("bootstrap.servers is required")
        group_id = values["group.id"] or None
        if group_id is None:
            if values["group.instance.id"] is not None:
                raise ConfigError("group.instance.id needs a group.id")
            if "enable.auto.commit" in given and values["enable.auto.commit"]:
                raise ConfigError("enable.auto.commit needs a group.id to commit to")
            # The Java client's rule: without a group there is nothing to commit to.
            values["enable.auto.commit"] = False
        if values["group.protocol"] == "consumer":
            for key in CLASSIC_ONLY:
                if key in given:
                    raise ConfigError(f"{key} cannot be set when group.protocol=consumer")
        elif "group.remote.assignor" in given and values["group.remote.assignor"] is not None:
            raise ConfigError("group.remote.assignor needs group.protocol=consumer")
        if values["heartbeat.interval.ms"] >= values["session.timeout.ms"]:
            raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
        for key in ("max.poll.interval.ms", "session.timeout.ms", "request.timeout.ms"):
            if values[key] > _MAX_INT:
                raise ConfigError(f"{key} does not fit an int32")
        client_id = values["client.id"] or f"kgroups-consumer-{next(_client_numbers)}"
        return cls(
            bootstrap_servers=values["bootstrap.servers"],
            security=ClientSecurity.from_values(values, given),
            client_id=client_id,
            client_rack=values["client.rack"] or None,
            group_id=group_id,
            group_instance_id=values["group.instance.id"] or None,
            group_protocol=values["group.protocol"],
            group_remote_assignor=values["group.remote.assignor"] or None,
            session_timeout_ms=values["session.timeout.ms"],
            heartbeat_interval_ms=values["heartbeat.interval.ms"],
            max_poll_interval_ms=values["max.poll.interval.ms"],
            max_poll_records=values["max.poll.records"],
            enable_auto_commit=values["enable.auto.commit"],
            auto_commit_interval_ms=values["auto.commit.interval.ms"],
            auto_offset_reset=values["auto.offset.reset"],
            partition_assignment_strategy=values["partition.assignment.strategy"],
            fetch_min_bytes=values["fetch.min.bytes"],
            fetch_max_bytes=values["fetch.max.bytes"],
            fetch_max_wait_ms=values["fetch.max.wait.ms"],
            max_partition_fetch_bytes=values["max.partition.fetch.bytes"],
            isolation_level=values["isolation.level"],
            check_crcs=values["check.crcs"],
            retry_backoff_ms=values["retry.backoff.ms"],
            request_timeout_ms=values["request.timeout.ms"],
            default_api_timeout_ms=values["default.api.timeout.ms"],
            metadata_max_age_ms=values["metadata.max.age.ms"],
            allow_auto_create_topics=values["allow.auto.create.topics"],
            exclude_internal_topics=values["exclude.internal.topics"],
        )
