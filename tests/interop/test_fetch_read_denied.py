"""librdkafka consuming a topic it may describe but not read (its own test
0119): the Fetch refusal reaches the application as TOPIC_AUTHORIZATION_FAILED,
rather than the response being dropped as malformed and fetched again."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kgroups.security.authorizer import AclBinding, Operation, PatternType, Permission, ResourceType

from broker_thread import BrokerThread

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def test_consumer_sees_topic_authorization_failed(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path, authorizer_class_name=STANDARD).start()
    try:
        assert broker.broker is not None and broker.broker.authorizer is not None
        broker.call(lambda: broker.broker.create_topic("orders", 1, {}))  # type: ignore[union-attr]
        grants = [
            AclBinding(
                rtype, name, PatternType.LITERAL, "User:ANONYMOUS", "*", op, Permission.ALLOW
            )
            for rtype, name, op in (
                (ResourceType.TOPIC, "orders", Operation.DESCRIBE),
                (ResourceType.GROUP, "readers", Operation.ALL),
            )
        ]
        broker.call(lambda: broker.broker.authorizer.create(grants))  # type: ignore[union-attr]
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "readers"})
        try:
            consumer.assign([TopicPartition("orders", 0, 0)])
            errors: list[int] = []
            deadline = time.monotonic() + 20
            while not errors and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is not None:
                    errors.append(message.error().code())
        finally:
            consumer.close()
    finally:
        broker.stop()
    assert errors == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
