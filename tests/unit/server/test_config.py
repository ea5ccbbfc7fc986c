from pathlib import Path

import pytest

from kgroups.config.broker_config import BrokerConfig, ConfigError


def test_defaults_are_kafkas() -> None:
    c = BrokerConfig()
    assert c.get_int("num.partitions") == 1
    assert c.get_int("socket.request.max.bytes") == 104857600
    assert c.get_int("group.initial.rebalance.delay.ms") == 3000
    assert c.get_int("offsets.topic.num.partitions") == 50
    assert c.log_retention_ms == 168 * 3_600_000
    # Kafka's is every interface; unconfigured, kgroups stays on loopback.
    assert c.listener() == ("127.0.0.1", 9092)


def test_listeners_get_their_protocol_from_kafkas_default_map() -> None:
    c = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,SSL://:9093,SASL_PLAINTEXT://:9094,SASL_SSL://:9095",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/etc/kafka/server.pem",
            "ssl.truststore.type": "PEM",
        }
    )
    assert [(s.name, s.protocol) for s in c.listener_specs()] == [
        ("PLAINTEXT", "PLAINTEXT"),
        ("SSL", "SSL"),
        ("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
        ("SASL_SSL", "SASL_SSL"),
    ]


def test_named_listeners_advertise_per_name() -> None:
    c = BrokerConfig(
        {
            "listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://:0",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "advertised.listeners": "EXTERNAL://kafka.example.com:19092",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert c.advertised_addresses({"EXTERNAL": 40000}) == {
        "INTERNAL": ("127.0.0.1", 9092),
        "EXTERNAL": ("kafka.example.com", 19092),
    }
    assert c.inter_broker_listener() == "INTERNAL"


def test_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("# comment\nnum.partitions=3\nlog.dirs = /tmp/x\nnum.network.threads=3\n")
    c = BrokerConfig.load(f, ["num.partitions=4", "listeners=PLAINTEXT://127.0.0.1:19092"])
    assert c.get_int("num.partitions") == 4
    assert c.log_dir == Path("/tmp/x")
    assert c.listener() == ("127.0.0.1", 19092)
    assert c.ignored == ["num.network.threads"]


def test_retention_units() -> None:
    assert BrokerConfig({"log.retention.minutes": "2"}).log_retention_ms == 120_000
    assert BrokerConfig({"log.retention.ms": "5", "log.retention.hours": "1"}).log_retention_ms == 5


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"no.such.key": "1"}, "unknown configuration key 'no.such.key'"),
        ({"num.partitions": "many"}, "invalid value 'many' for num.partitions"),
        ({"num.partitions": "0"}, "must be at least 1"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
        ({"listeners": "localhost:9092"}, "not of the form"),
        ({"listeners": "CLIENT://:9092"}, "no security protocol"),
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "each once"),
        ({"listener.security.protocol.map": "A:TLS"}, "not of the form"),
        ({"advertised.listeners": "SSL://h:1"}, "not a listener"),
        ({"inter.broker.listener.name": "SSL"}, "not a listener"),
        ({"listeners": "SSL://:9093"}, "ssl.keystore.type must be PEM"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "older ones are refused"),
        ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
        ({"log.cleanup.policy": "shred"}, "log.cleanup.policy"),
        ({"group.coordinator.rebalance.protocols": "consumer"}, "must list classic"),
        ({"group.coordinator.rebalance.protocols": "classic,other"}, "must list classic"),
        ({"group.consumer.session.timeout.ms": "70000"}, "group.consumer.session.timeout.ms"),
        ({"group.consumer.heartbeat.interval.ms": "1000"}, "group.consumer.heartbeat"),
    ],
)
def test_bad_settings_are_refused_by_name(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig(props)


def test_a_tls_listener_without_a_trust_store_keeps_kafkas_default_truststore_type() -> None:
    # As in Kafka, ssl.truststore.type (JKS by default) matters only for a trust store.
    keystore = {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/etc/kafka/server.pem"}
    c = BrokerConfig({"listeners": "SASL_SSL://:9093", **keystore})
    assert [s.protocol for s in c.listener_specs()] == ["SASL_SSL"]
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.type must be PEM"):
        BrokerConfig(
            {"listeners": "SSL://:9093", **keystore, "ssl.truststore.location": "/etc/ca.crt"}
        )


def test_bad_override_syntax() -> None:
    with pytest.raises(ConfigError, match="key=value"):
        BrokerConfig.load(None, ["novalue"])


def test_the_consumer_and_share_group_protocols_are_served_by_default() -> None:
    assert BrokerConfig().rebalance_protocols() == {"classic", "consumer", "share"}
    spaced = BrokerConfig({"group.coordinator.rebalance.protocols": "classic, share"})
    assert spaced.rebalance_protocols() == {"classic", "share"}


def test_share_group_settings_keep_kafkas_bounds() -> None:
    with pytest.raises(ConfigError, match=r"group\.share\.delivery.count.limit"):
        BrokerConfig({"group.share.delivery.count.limit": "11"})
    with pytest.raises(ConfigError, match=r"group\.share\.partition.max.record.locks"):
        BrokerConfig({"group.share.partition.max.record.locks": "99"})
    with pytest.raises(ConfigError, match=r"group\.share\.record.lock.duration.ms"):
        BrokerConfig({"group.share.record.lock.duration.ms": "70000"})
    with pytest.raises(ConfigError, match=r"group\.share\.session.timeout.ms"):
        BrokerConfig({"group.share.session.timeout.ms": "1000"})


def test_the_cleaners_broker_defaults_become_every_topics_defaults(tmp_path: Path) -> None:
    from kgroups.server.broker import Broker

    config = BrokerConfig(
        {
            "log.dirs": str(tmp_path),
            "log.cleaner.min.cleanable.ratio": "0.2",
            "log.cleaner.min.compaction.lag.ms": "1000",
            "log.cleaner.max.compaction.lag.ms": "60000",
        }
    )
    defaults = Broker(config).default_log_config
    assert defaults.min_cleanable_dirty_ratio == 0.2
    assert defaults.min_compaction_lag_ms == 1000
    assert defaults.max_compaction_lag_ms == 60000
    # A topic's own value still wins.
    assert (
        defaults.with_overrides({"min.cleanable.dirty.ratio": "0.9"}).min_cleanable_dirty_ratio
        == 0.9
    )
    with pytest.raises(ConfigError, match=r"log\.cleaner\.min\.cleanable\.ratio"):
        BrokerConfig({"log.cleaner.min.cleanable.ratio": "1.5"})
