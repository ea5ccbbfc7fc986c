"""Topics for the Spark tests, created, filled and checked with confluent-kafka."""

from __future__ import annotations


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Kept for ever: the tests write records stamped years ago, which the
    broker's retention check (every five minutes) would otherwise delete while
    a module still reads them."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, partitions, 1, config={"retention.ms": "-1"})
    admin.create_topics([topic])[name].result(20)


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


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The offsets ``group`` has committed for ``topic``, by partition."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(partitions)]
    )
    result = admin.list_consumer_group_offsets([request])[group].result(10)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}
