"""DescribeConfigs v4 reports each config's type as Kafka 4.x types it (KIP-569)
and, when the request sets include_documentation, what the key does; without
it the documentation is null, as Kafka answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from config_admin_wire import BROKER, GROUP, SET, described, incremental
from topic_admin_wire import create

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

CLIENT_METRICS = 16
# KIP-569's numbers.
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST, CLASS, PASSWORD = 1, 2, 3, 5, 6, 7, 8, 9

# Each resource's well-known keys with Kafka 4.x's types.
TOPIC_TYPES = {
    "retention.ms": LONG,
    "segment.bytes": INT,
    "cleanup.policy": LIST,
    "min.cleanable.dirty.ratio": DOUBLE,
    "unclean.leader.election.enable": BOOLEAN,
    "compression.type": STRING,
    "max.message.bytes": INT,
    "preallocate": BOOLEAN,
}
BROKER_TYPES = {
    "group.min.session.timeout.ms": INT,
    "ssl.keystore.password": PASSWORD,
    "log.retention.ms": LONG,
    "log.retention.hours": INT,
    "log.cleanup.policy": LIST,
    "log.cleaner.min.cleanable.ratio": DOUBLE,
    "auto.create.topics.enable": BOOLEAN,
    "compression.type": STRING,
    "connections.max.idle.ms": LONG,
    "sasl.enabled.mechanisms": LIST,
    "listener.name.plaintext.ssl.key.password": PASSWORD,
}
GROUP_TYPES = {"consumer.session.timeout.ms": INT, "consumer.heartbeat.interval.ms": INT}
CLIENT_METRICS_TYPES = {"metrics": LIST, "interval.ms": INT, "match": LIST}


@pytest.fixture
def port(tmp_path: Path) -> Any:
    broker = BrokerThread(
        tmp_path / "data",
        ssl_keystore_password="keystore-s3cr3t",
        listener_name_plaintext_ssl_key_password="key-s3cr3t",
    ).start()
    try:
        assert create(broker.port, "typed", 1).error_code == ErrorCode.none
        subscription = [
            ("metrics", SET, "org.apache.kafka.producer."),
            ("interval.ms", SET, "1000"),
            ("match", SET, "client_id=typed-.*"),
        ]
        answer = incremental(broker.port, [(CLIENT_METRICS, "typed", subscription)])
        assert answer == [("typed", ErrorCode.none, None)]
        yield broker.port
    finally:
        broker.stop()


def _entries(port: int, rtype: int, name: str, documentation: bool) -> dict[str, Any]:
    result = described(port, rtype, name, documentation=documentation)
    assert result.error_code == ErrorCode.none, result.error_message
    return {c.name: c for c in result.configs}


@pytest.mark.parametrize(
    ("rtype", "name", "types"),
    [
        (2, "typed", TOPIC_TYPES),
        (BROKER, "0", BROKER_TYPES),
        (GROUP, "some-group", GROUP_TYPES),
        (CLIENT_METRICS, "typed", CLIENT_METRICS_TYPES),
    ],
    ids=["topic", "broker", "group", "client-metrics"],
)
def test_each_key_has_kafkas_type_and_documentation_when_asked(
    port: int, rtype: int, name: str, types: dict[str, int]
) -> None:
    with_docs = _entries(port, rtype, name, documentation=True)
    without = _entries(port, rtype, name, documentation=False)
    assert {k: with_docs[k].config_type for k in types} == types
    assert {k: without[k].config_type for k in types} == types
    # Every entry has a known type; every key of the table says what it does
    # (a per-listener key has none, as in Kafka), and nothing without asking.
    assert all(e.config_type != 0 for e in with_docs.values())
    assert all(e.documentation for k, e in with_docs.items() if not k.startswith("listener.name."))
    assert all(e.documentation is None for e in without.values())


def test_passwords_stay_hidden_with_their_type(port: int) -> None:
    entries = _entries(port, BROKER, "0", documentation=True)
    password = entries["ssl.keystore.password"]
    assert (password.config_type, password.is_sensitive, password.value) == (PASSWORD, True, None)
    assert password.documentation
    plain = entries["log.retention.ms"]
    assert (plain.config_type, plain.is_sensitive) == (LONG, False)
