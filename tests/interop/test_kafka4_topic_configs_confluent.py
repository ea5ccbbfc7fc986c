"""Every topic config Kafka 4.x knows goes through confluent-kafka's admin
client: CreateTopics, IncrementalAlterConfigs, AlterConfigs, DescribeConfigs
(librdkafka's own tests 0077 and 0081 set file.delete.delay.ms and others)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

# Kafka 4.x's LogConfig, with a value other than its default for each.
KAFKA4_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "zstd",
    "compression.gzip.level": "5",
    "compression.lz4.level": "10",
    "compression.zstd.level": "7",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "1000",
    "flush.messages": "100",
    "flush.ms": "1000",
    "follower.replication.throttled.replicas": "0:1",
    "index.interval.bytes": "8192",
    "leader.replication.throttled.replicas": "*",
    "local.retention.bytes": "1000",
    "local.retention.ms": "1000",
    "max.compaction.lag.ms": "100000",
    "max.message.bytes": "2000000",
    "message.downconversion.enable": "false",
    "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.before.max.ms": "3600000",
    "message.timestamp.type": "LogAppendTime",
    "min.cleanable.dirty.ratio": "0.25",
    "min.compaction.lag.ms": "10",
    "min.insync.replicas": "2",
    "preallocate": "true",
    "remote.log.copy.disable": "true",
    "remote.log.delete.on.disable": "true",
    "remote.storage.enable": "false",
    "retention.bytes": "1000000",
    "retention.ms": "3600000",
    "segment.bytes": "1048576",
    "segment.index.bytes": "4096",
    "segment.jitter.ms": "10",
    "segment.ms": "3600000",
    "unclean.leader.election.enable": "true",
}


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_every_kafka4_topic_config_is_created_altered_and_described(broker: BrokerThread) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("all", 1, 1, config=KAFKA4_TOPIC_CONFIGS)])["all"].result(20)
    admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(20)

    def described(name: str) -> dict[str, ConfigEntry]:
        resource = ConfigResource(ResourceType.TOPIC, name)
        entries: dict[str, ConfigEntry] = admin.describe_configs([resource])[resource].result(20)
        return entries

    created = described("all")
    assert {k: e.value for k, e in created.items()} == KAFKA4_TOPIC_CONFIGS
    assert {e.source for e in created.values()} == {ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    defaults = described("plain")
    assert set(defaults) == set(KAFKA4_TOPIC_CONFIGS)
    assert defaults["file.delete.delay.ms"].value == "60000"
    assert defaults["compression.type"].value == "producer"

    resource = ConfigResource(
        ResourceType.TOPIC,
        "plain",
        incremental_configs=[
            ConfigEntry(
                "file.delete.delay.ms", "5000", incremental_operation=AlterConfigOpType.SET
            ),
            ConfigEntry(
                "follower.replication.throttled.replicas",
                "0:1",
                incremental_operation=AlterConfigOpType.APPEND,
            ),
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(20)
    now = described("plain")
    assert now["file.delete.delay.ms"].value == "5000"
    assert now["follower.replication.throttled.replicas"].value == "0:1"

    legacy = ConfigResource(
        ResourceType.TOPIC, "plain", set_config={"preallocate": "true", "segment.jitter.ms": "7"}
    )
    admin.alter_configs([legacy])[legacy].result(20)
    now = described("plain")
    assert now["preallocate"].value == "true" and now["segment.jitter.ms"].value == "7"
    # AlterConfigs replaced the whole set: the incremental change is gone.
    assert now["file.delete.delay.ms"].value == "60000"


def test_out_of_bounds_timestamps_are_refused(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    configs = {"message.timestamp.before.max.ms": "60000"}
    admin.create_topics([NewTopic("bounded", 1, 1, config=configs)])["bounded"].result(20)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    outcomes: list[object] = []
    now = int(time.time() * 1000)
    for ts in (now, now - 3_600_000):
        producer.produce(
            "bounded", value=b"v", timestamp=ts, on_delivery=lambda err, _m: outcomes.append(err)
        )
        producer.flush(20)
    assert outcomes[0] is None
    assert outcomes[1] is not None
    assert outcomes[1].code() == KafkaError.INVALID_TIMESTAMP  # type: ignore[attr-defined]


def test_broker_defaults_of_keys_without_effect_are_described(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    broker = BrokerThread(
        tmp_path / "data",
        min_insync_replicas=2,
        log_segment_delete_delay_ms=5000,
        compression_type="gzip",
    ).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)
        resource = ConfigResource(ResourceType.TOPIC, "t")
        entries = admin.describe_configs([resource])[resource].result(20)
        static = ConfigSource.STATIC_BROKER_CONFIG.value
        for key, value in (
            ("min.insync.replicas", "2"),
            ("file.delete.delay.ms", "5000"),
            ("compression.type", "gzip"),
        ):
            assert (entries[key].value, entries[key].source) == (value, static), key
    finally:
        broker.stop()
