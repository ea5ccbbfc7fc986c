"""IncrementalAlterConfigs and AlterConfigs on topics, on a broker alone, with
the answers Kafka gives (ConfigAdminManagerTest, ControllerConfigurationValidator,
PlaintextAdminIntegrationTest's incremental alter cases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_admin_wire import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    configs,
    incremental,
    legacy,
)
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from topic_admin_wire import create

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from broker_thread import BrokerThread
from raw_wire import call_once

NONE = ErrorCode.none
INVALID_CONFIG = ErrorCode.invalid_config
INVALID_REQUEST = ErrorCode.invalid_request
DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


@pytest.mark.parametrize("version", [0, 1])
def test_set_and_delete_every_version(broker: BrokerThread, version: int) -> None:
    assert create(broker.port, "t", 1, retention_ms="1000").error_code == NONE
    answers = incremental(
        broker.port,
        [(TOPIC, "t", [("segment.bytes", SET, "2000"), ("retention.ms", DELETE, None)])],
        version=version,
    )
    assert answers == [("t", NONE, None)]
    now = configs(broker.port, TOPIC, "t")
    assert now["segment.bytes"] == ("2000", DYNAMIC_TOPIC_CONFIG)
    assert now["retention.ms"] == ("604800000", DEFAULT_CONFIG)


def test_append_and_subtract_a_list(broker: BrokerThread) -> None:
    assert create(broker.port, "t", 1).error_code == NONE
    # APPEND starts from the effective value when there is no override.
    assert incremental(broker.port, [(TOPIC, "t", [("cleanup.policy", APPEND, "compact")])]) == [
        ("t", NONE, None)
    ]
    assert configs(broker.port, TOPIC, "t")["cleanup.policy"] == (
        "delete,compact",
        DYNAMIC_TOPIC_CONFIG,
    )
    assert incremental(broker.port, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")])]) == [
        ("t", NONE, None)
    ]
    assert configs(broker.port, TOPIC, "t")["cleanup.policy"] == ("compact", DYNAMIC_TOPIC_CONFIG)
    (answer,) = incremental(broker.port, [(TOPIC, "t", [("retention.ms", APPEND, "1")])])
    assert answer == (
        "t",
        INVALID_CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    (answer,) = incremental(broker.port, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "compact")])])
    assert answer[1] == INVALID_CONFIG  # nothing left


def test_kafka_refusals(broker: BrokerThread) -> None:
    assert create(broker.port, "t", 1).error_code == NONE
    answers = incremental(
        broker.port,
        [
            (TOPIC, "t", [("segment.bytes", SET, "2000")]),
            (TOPIC, "t", [("segment.ms", SET, "2000")]),
            (TOPIC, "missing", [("segment.ms", SET, "2000")]),
            (TOPIC, "t2", [("a", SET, "1"), ("a", DELETE, None)]),
            (TOPIC, "t3", [("retention.ms", SET, None)]),
            (TOPIC, "t4", [("retention.ms", 7, "1")]),
            (99, "x", [("retention.ms", SET, "1")]),
        ],
    )
    assert answers == [
        ("t", INVALID_REQUEST, "Each resource must appear at most once."),
        ("t", INVALID_REQUEST, "Each resource must appear at most once."),
        ("missing", ErrorCode.unknown_topic_or_partition, "Topic missing does not exist."),
        ("t2", INVALID_REQUEST, "Error due to duplicate config keys"),
        ("t3", INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ("t4", INVALID_REQUEST, "Unknown operation type 7"),
        ("x", INVALID_REQUEST, "Unknown resource type 99"),
    ]
    answers = incremental(
        broker.port,
        [
            (TOPIC, "t", [("no.such.config", SET, "1")]),
        ],
    )
    assert answers == [("t", INVALID_CONFIG, "Unknown topic config name: no.such.config")]
    ((_, error, message),) = incremental(broker.port, [(TOPIC, "t", [("retention.ms", SET, "x")])])
    assert (error, message) == (
        INVALID_CONFIG,
        "Invalid value x for configuration retention.ms: Not a number",
    )
    assert "segment.bytes" not in {
        k for k, (_, source) in configs(broker.port, TOPIC, "t").items() if source == 1
    }


def test_validate_only_changes_nothing(broker: BrokerThread) -> None:
    assert create(broker.port, "t", 1).error_code == NONE
    ops = [("retention.ms", SET, "1000")]
    assert incremental(broker.port, [(TOPIC, "t", ops)], validate_only=True) == [("t", NONE, None)]
    assert legacy(broker.port, [(TOPIC, "t", {"retention.ms": "5"})], validate_only=True) == [
        ("t", NONE, None)
    ]
    assert configs(broker.port, TOPIC, "t")["retention.ms"] == ("604800000", DEFAULT_CONFIG)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_whole_set(broker: BrokerThread, version: int) -> None:
    assert create(broker.port, "t", 1, retention_ms="1000", segment_bytes="5000").error_code == NONE
    answers = legacy(broker.port, [(TOPIC, "t", {"segment.ms": "60000"})], version=version)
    assert answers == [("t", NONE, None)]
    now = configs(broker.port, TOPIC, "t")
    assert now["segment.ms"] == ("60000", DYNAMIC_TOPIC_CONFIG)
    assert now["retention.ms"][1] == DEFAULT_CONFIG
    assert now["segment.bytes"][1] == DEFAULT_CONFIG
    answers = legacy(
        broker.port,
        [(TOPIC, "t", {"retention.ms": None}), (TOPIC, "t2", {}), (TOPIC, "t2", {})],
        version=version,
    )
    assert answers == [
        ("t", INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ("t2", INVALID_REQUEST, "Each resource must appear at most once."),
        ("t2", INVALID_REQUEST, "Each resource must appear at most once."),
    ]


def test_internal_topics_keep_the_brokers_configs(broker: BrokerThread) -> None:
    call_once(
        broker.port,
        FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("g",)),
    )  # creates __consumer_offsets
    (answer,) = incremental(
        broker.port, [(TOPIC, "__consumer_offsets", [("cleanup.policy", SET, "delete")])]
    )
    assert answer[1] == INVALID_REQUEST
    (answer,) = legacy(broker.port, [(TOPIC, "__consumer_offsets", {})])
    assert answer[1] == INVALID_REQUEST
    (answer,) = incremental(
        broker.port, [(TOPIC, "__consumer_offsets", [("max.compaction.lag.ms", SET, "60000")])]
    )
    assert answer[1] == INVALID_REQUEST


def test_configs_survive_a_restart(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data").start()
    try:
        assert create(b.port, "t", 2).error_code == NONE
        assert incremental(b.port, [(TOPIC, "t", [("retention.ms", SET, "1234")])]) == [
            ("t", NONE, None)
        ]
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data").start()
    try:
        assert configs(b.port, TOPIC, "t")["retention.ms"] == ("1234", DYNAMIC_TOPIC_CONFIG)
    finally:
        b.stop()
