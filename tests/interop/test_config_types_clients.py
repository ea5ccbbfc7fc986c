"""What an admin client shows of a config's type (KIP-569). kafka-python's
KafkaAdminClient reports each entry's config_type, and gets Kafka 4.x's types
for topic, broker, group and client metrics keys. confluent-kafka 2.16's
ConfigEntry has no type attribute (librdkafka's ConfigEntry carries none) and
no config resource type for groups or client metrics, so from it the check is
that describing topics and the broker still works."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_admin_wire import SET, incremental

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC_TYPES = {
    "retention.ms": "LONG",
    "segment.bytes": "INT",
    "cleanup.policy": "LIST",
    "min.cleanable.dirty.ratio": "DOUBLE",
    "unclean.leader.election.enable": "BOOLEAN",
    "compression.type": "STRING",
}
BROKER_TYPES = {
    "group.min.session.timeout.ms": "INT",
    "ssl.keystore.password": "PASSWORD",
    "log.retention.ms": "LONG",
}
GROUP_TYPES = {"consumer.session.timeout.ms": "INT"}
CLIENT_METRICS_TYPES = {"metrics": "LIST", "interval.ms": "INT"}


def _setup(broker: BrokerThread) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("typed", 1, 1)])["typed"].result(20)
    subscription = [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000")]
    answer = incremental(broker.port, [(16, "typed", subscription)])
    assert answer == [("typed", ErrorCode.none, None)]


def test_kafka_python_shows_kafkas_types(tmp_path: Path) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    broker = BrokerThread(tmp_path / "data", ssl_keystore_password="s3cr3t").start()
    try:
        _setup(broker)
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            wanted = {
                (ConfigResourceType.TOPIC, "typed"): TOPIC_TYPES,
                (ConfigResourceType.BROKER, "0"): BROKER_TYPES,
                (ConfigResourceType.GROUP, "some-group"): GROUP_TYPES,
                (ConfigResourceType.CLIENT_METRICS, "typed"): CLIENT_METRICS_TYPES,
            }
            for (rtype, name), types in wanted.items():
                found = admin.describe_configs([ConfigResource(rtype, name)], config_filter="all")
                entries = found[rtype.name.lower()][name]
                assert {k: entries[k]["config_type"] for k in types} == types, rtype
        finally:
            admin.close()
    finally:
        broker.stop()


def test_confluent_kafka_still_describes_topics_and_the_broker(broker: BrokerThread) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    _setup(broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for rtype, name, keys in (
        (ResourceType.TOPIC, "typed", TOPIC_TYPES),
        (ResourceType.BROKER, "0", BROKER_TYPES),
    ):
        resource = ConfigResource(rtype, name)
        entries = admin.describe_configs([resource])[resource].result(20)
        assert set(keys) <= set(entries), rtype
