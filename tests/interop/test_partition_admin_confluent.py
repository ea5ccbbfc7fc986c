"""confluent-kafka's AdminClient create_partitions and delete_records against
kgroups, and a KIP-848 consumer group (``group.protocol=consumer``) that gets
the partitions added to its topic without any client asking."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def test_admin_client_create_partitions_and_delete_records(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(20)
    admin.create_partitions([NewPartitions("orders", 4)])["orders"].result(20)
    assert len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 4
    with pytest.raises(KafkaException) as refused:
        admin.create_partitions([NewPartitions("orders", 3)])["orders"].result(20)
    assert refused.value.args[0].name() == "INVALID_PARTITIONS"
    admin.create_partitions([NewPartitions("orders", 8)], validate_only=True)["orders"].result(20)
    assert len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 4

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("orders", value=str(i).encode(), partition=3)
    assert producer.flush(20) == 0
    futures = admin.delete_records([TopicPartition("orders", 3, 6)])
    deleted = futures[TopicPartition("orders", 3, 6)].result(20)
    assert deleted.low_watermark == 6
    everything = TopicPartition("orders", 3, -1)  # OFFSET_END: the high watermark
    assert admin.delete_records([everything])[everything].result(20).low_watermark == 10
    beyond = TopicPartition("orders", 2, 5)
    with pytest.raises(KafkaException) as refused:
        admin.delete_records([beyond])[beyond].result(20)
    assert refused.value.args[0].name() == "OFFSET_OUT_OF_RANGE"


def test_a_consumer_group_gets_the_added_partitions(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    broker = BrokerThread(
        tmp_path,
        group_consumer_heartbeat_interval_ms=500,
        group_consumer_min_heartbeat_interval_ms=100,
    ).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(20)
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "kip848",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["orders"])

        def wait_assigned(count: int) -> None:
            deadline = time.monotonic() + 20
            while len(consumer.assignment()) != count:
                assert time.monotonic() < deadline, consumer.assignment()
                consumer.poll(0.1)

        wait_assigned(2)
        admin.create_partitions([NewPartitions("orders", 4)])["orders"].result(20)
        wait_assigned(4)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce("orders", value=b"in a new partition", partition=3)
        assert producer.flush(20) == 0
        deadline = time.monotonic() + 20
        message = None
        while message is None or message.error() is not None:
            assert time.monotonic() < deadline
            message = consumer.poll(0.2)
        assert (message.partition(), message.value()) == (3, b"in a new partition")
        consumer.close()
    finally:
        broker.stop()
