"""Topics, records and committed offsets for the lag tests, made with confluent-kafka."""

from __future__ import annotations

from broker_thread import BrokerThread

HOUR_MS = 3_600_000


def create_topic(b: BrokerThread, topic: str, partitions: int) -> None:
    assert b.broker is not None
    broker = b.broker
    b.call(lambda: broker.create_topic(topic, partitions, {}))


def produce_every_second(bootstrap: str, topic: str, per_partition: int, first_ms: int) -> None:
    """Records 1 s apart, starting at ``first_ms``, in every partition of 3."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for partition in range(3):
        for i in range(per_partition):
            producer.produce(topic, b"x" * 10, partition=partition, timestamp=first_ms + i * 1000)
    assert producer.flush(20) == 0


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
    finally:
        consumer.close()
