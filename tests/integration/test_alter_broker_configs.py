"""IncrementalAlterConfigs and AlterConfigs on the broker (KIP-226), on a
broker alone: the keys Kafka changes at run time, per broker and as the
cluster-wide default, with Kafka's refusals (ConfigAdminManagerTest,
DynamicBrokerConfigTest); topics follow the new defaults at once."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import EARLIEST, list_offset, metadata, produce, wait_for
from config_admin_wire import APPEND, BROKER, SET, TOPIC, configs, described, incremental, legacy
from topic_admin_wire import create

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

NONE = ErrorCode.none
INVALID_REQUEST = ErrorCode.invalid_request
INVALID_CONFIG = ErrorCode.invalid_config
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3


def test_broker_configs_per_broker_and_default(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", log_retention_check_interval_ms=100).start()
    try:
        port, me = b.port, str(b.config.broker_id)
        assert create(port, "t", 1, segment_bytes="200").error_code == NONE
        old = int(time.time() * 1000) - 60_000
        for value in (b"a" * 50, b"b" * 50, b"c" * 50):
            assert produce(port, "t", 0, value, timestamp=old)[0] == NONE

        ops = [("log.retention.ms", SET, "1000"), ("num.partitions", SET, "3")]
        assert incremental(port, [(BROKER, "", ops)]) == [("", NONE, None)]
        assert configs(port, BROKER, "") == {
            "log.retention.ms": ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            "num.partitions": ("3", DYNAMIC_DEFAULT_BROKER_CONFIG),
        }
        mine = described(port, BROKER, me)
        entry = next(c for c in mine.configs if c.name == "log.retention.ms")
        assert (entry.value, entry.config_source, entry.read_only) == (
            "1000",
            DYNAMIC_DEFAULT_BROKER_CONFIG,
            False,
        )
        assert next(c for c in mine.configs if c.name == "listeners").read_only
        assert configs(port, TOPIC, "t")["retention.ms"][0] == "1000"
        wait_for(lambda: list_offset(port, "t", 0, EARLIEST)[1] >= 2)  # applied live
        assert create(port, "three", -1).error_code == NONE
        assert len(metadata(port, "three").topics[0].partitions) == 3

        # This broker's own value beats the default.
        assert incremental(port, [(BROKER, me, [("log.retention.ms", SET, "2000")])]) == [
            (me, NONE, None)
        ]
        assert configs(port, BROKER, me)["log.retention.ms"] == ("2000", DYNAMIC_BROKER_CONFIG)
        assert configs(port, TOPIC, "t")["retention.ms"][0] == "2000"
        assert incremental(port, [(BROKER, me, [("log.cleanup.policy", APPEND, "compact")])]) == [
            (me, NONE, None)
        ]
        assert configs(port, BROKER, me)["log.cleanup.policy"] == (
            "delete,compact",
            DYNAMIC_BROKER_CONFIG,
        )

        answers = incremental(
            port,
            [
                (BROKER, "7", [("log.retention.ms", SET, "1")]),
                (BROKER, "x", [("log.retention.ms", SET, "1")]),
                (BROKER, "", [("listeners", SET, "PLAINTEXT://:1")]),
                (BROKER, me, [("no.such.key", SET, "1")]),
            ],
        )
        assert answers == [
            ("7", INVALID_REQUEST, f"Unexpected broker id, expected {me}, but received 7"),
            ("x", INVALID_REQUEST, "Node id must be an integer, but it is: x"),
            ("", INVALID_REQUEST, "Cannot update these configs dynamically: Set(listeners)"),
            (me, INVALID_CONFIG, "Unknown broker config name: no.such.key"),
        ]
        for key, value in (("log.retention.ms", "x"), ("log.cleanup.policy", "sometimes")):
            ((_, error, _),) = incremental(port, [(BROKER, "", [(key, SET, value)])])
            assert error == INVALID_CONFIG
        # AlterConfigs names a broker by id only, and replaces its whole set.
        assert legacy(port, [(BROKER, "", {"num.partitions": "2"})]) == [
            ("", INVALID_REQUEST, "Node id must be an integer, but it is: ")
        ]
        assert legacy(port, [(BROKER, me, {"message.max.bytes": "2000000"})]) == [(me, NONE, None)]
        now = configs(port, BROKER, me)
        assert now["message.max.bytes"] == ("2000000", DYNAMIC_BROKER_CONFIG)
        assert now["log.retention.ms"] == ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    finally:
        b.stop()
    b = BrokerThread(tmp_path / "data").start()
    try:
        assert configs(b.port, BROKER, "")["num.partitions"] == ("3", DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert configs(b.port, TOPIC, "t")["max.message.bytes"][0] == "2000000"
    finally:
        b.stop()


def test_synonyms_in_kafka_order(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", log_retention_hours=100).start()
    try:
        port, me = b.port, str(b.config.broker_id)
        assert create(port, "t", 1, retention_ms="1000").error_code == NONE
        assert incremental(port, [(BROKER, "", [("log.retention.ms", SET, "2000")])]) == [
            ("", NONE, None)
        ]
        assert incremental(port, [(BROKER, me, [("log.retention.minutes", SET, "3")])]) == [
            (me, NONE, None)
        ]
        result = described(port, TOPIC, "t", synonyms=True, keys=["retention.ms", "segment.ms"])
        found = {c.name: c for c in result.configs}
        assert [(s.name, s.value, s.source) for s in found["retention.ms"].synonyms] == [
            ("retention.ms", "1000", 1),
            ("log.retention.ms", "2000", DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.minutes", "3", DYNAMIC_BROKER_CONFIG),
            ("log.retention.hours", "100", 4),
            ("log.retention.hours", "168", 5),
        ]
        assert found["segment.ms"].config_source == 5
        assert [(s.name, s.source) for s in found["segment.ms"].synonyms] == [("log.roll.hours", 5)]
        # The topic's override gone, its value and source are the broker's.
        assert incremental(port, [(TOPIC, "t", [("retention.ms", 1, None)])]) == [("t", NONE, None)]
        assert configs(port, TOPIC, "t")["retention.ms"] == ("2000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    finally:
        b.stop()


def test_kerberos_and_login_refresh_keys_are_accepted_per_broker(tmp_path: Path) -> None:
    """Kafka lets these change per broker at run time (librdkafka's admin test
    sets one); kgroups serves no Kerberos, so they are kept and described only."""
    b = BrokerThread(tmp_path / "data").start()
    try:
        port, me = b.port, str(b.config.broker_id)
        ops = [
            ("sasl.kerberos.min.time.before.relogin", SET, "58000"),
            ("sasl.kerberos.ticket.renew.window.factor", SET, "0.7"),
            ("sasl.login.refresh.buffer.seconds", SET, "200"),
        ]
        assert incremental(port, [(BROKER, me, ops)]) == [(me, NONE, None)]
        described_now = configs(port, BROKER, me)
        assert described_now["sasl.kerberos.min.time.before.relogin"] == (
            "58000",
            DYNAMIC_BROKER_CONFIG,
        )
        assert described_now["sasl.login.refresh.buffer.seconds"][0] == "200"
    finally:
        b.stop()
