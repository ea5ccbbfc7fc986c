"""A batch refused for some of its records names them (the produce response's
record errors), as Kafka's log validator does: librdkafka then fails those
records with the broker's error and the rest of the batch with
_INVALID_DIFFERENT_RECORD (librdkafka's own test 0011 checks this). The
indices on the wire, for timestamps out of bounds too, are in
test_produce_record_errors_wire.py."""

from __future__ import annotations

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _delivery_errors(
    broker: BrokerThread, topic: str, messages: list[dict[str, bytes]]
) -> list[int]:
    from confluent_kafka import Producer

    errors: dict[int, int] = {}
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 500, "message.send.max.retries": 0}
    )
    for i, fields in enumerate(messages):
        producer.produce(
            topic,
            partition=0,
            on_delivery=lambda err, _msg, i=i: errors.__setitem__(i, err.code() if err else 0),
            **fields,
        )
    producer.flush(30)
    return [errors[i] for i in range(len(messages))]


def _create(broker: BrokerThread, topic: str, config: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(20)


def test_keyless_records_on_a_compacted_topic_are_named(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaError

    _create(broker, "compacted", {"cleanup.policy": "compact"})
    messages = [{"value": b"v"} if i % 3 == 0 else {"key": b"k", "value": b"v"} for i in range(7)]
    errors = _delivery_errors(broker, "compacted", messages)
    assert errors == [
        KafkaError.INVALID_RECORD if i % 3 == 0 else KafkaError._INVALID_DIFFERENT_RECORD
        for i in range(7)
    ]
