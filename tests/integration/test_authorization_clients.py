"""Real clients against a broker with ACLs: what the anonymous principal is
granted works end to end, what it is not is refused with Kafka's errors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_wire import STANDARD, add_acls, call_as
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from kio.schema.metadata.v4 import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v4.request import MetadataRequestTopic as MetadataTopicV4
from kio.schema.metadata.v9 import MetadataRequest as MetadataRequestV9

from kgroups.errors import ErrorCode
from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType

from broker_thread import BrokerThread

ANON = "User:ANONYMOUS"


def _allow(rtype: ResourceType, name: str, op: Operation) -> AclBinding:
    return AclBinding(rtype, name, PatternType.LITERAL, ANON, "*", op, Permission.ALLOW)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD, super_users="User:admin").start()
    try:
        yield bt
    finally:
        bt.stop()


def test_granted_produce_and_consume_work_and_a_missing_group_acl_is_refused(
    broker: BrokerThread,
) -> None:
    add_acls(
        broker,
        _allow(ResourceType.CLUSTER, "kafka-cluster", Operation.CREATE),
        _allow(ResourceType.TOPIC, "orders", Operation.WRITE),
        _allow(ResourceType.TOPIC, "orders", Operation.READ),
        _allow(ResourceType.GROUP, "billing", Operation.READ),
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(3):
        producer.produce("orders", value=b"%d" % i)
    assert producer.flush(30) == 0

    def consume(group: str) -> tuple[list[bytes], list[int]]:
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["orders"])
        got: list[bytes] = []
        errors: list[int] = []
        deadline = time.monotonic() + 30
        try:
            while len(got) < 3 and not errors and time.monotonic() < deadline:
                try:
                    msg = consumer.poll(0.5)
                except KafkaException as e:
                    errors.append(e.args[0].code())
                    continue
                if msg is None:
                    continue
                if msg.error():
                    errors.append(msg.error().code())
                else:
                    got.append(msg.value())
        finally:
            consumer.close()
        return got, errors

    assert consume("billing") == ([b"0", b"1", b"2"], [])
    got, errors = consume("audit")
    assert got == [] and errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]


def test_older_metadata_versions_hide_topics_too(broker: BrokerThread) -> None:
    add_acls(broker, _allow(ResourceType.CLUSTER, "kafka-cluster", Operation.CREATE))
    v4 = MetadataRequestV4(topics=(MetadataTopicV4(name="secret"),), allow_auto_topic_creation=True)
    (topic,) = call_as(broker, ANON, v4).topics
    assert topic.error_code == ErrorCode.topic_authorization_failed
    everything = MetadataRequestV9(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert call_as(broker, ANON, everything).topics == ()
    # Refused, so not created either.
    assert [t.name for t in call_as(broker, "User:admin", everything).topics] == []
