"""Topics for the Spark tests, created and filled with confluent-kafka."""

from __future__ import annotations


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes, int]],
    headers: list[tuple[str, bytes]] | None = None,
) -> None:
    """Write (key, value, partition) records with confluent-kafka, waiting for all acks."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, partition in records:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
    assert producer.flush(30) == 0
