from __future__ import annotations

from confluent_kafka import TopicPartition
from service import make_consumer, total_orders

from kgroups.testing import EmbeddedBroker


def test_totals_orders(kafka_bootstrap, kafka_helpers):
    kafka_helpers.create_topic("orders", partitions=3)
    kafka_helpers.produce("orders", [b"5", b"7"])
    consumer = make_consumer(kafka_bootstrap)
    try:
        assert total_orders(consumer, "orders", 2) == 12
    finally:
        consumer.close()


def test_committed_offset_survives_kill_9(tmp_path):
    with EmbeddedBroker(tmp_path / "data", process=True) as broker:
        from kgroups.testing.helpers import KafkaHelpers

        helpers = KafkaHelpers(broker.bootstrap_servers)
        helpers.create_topic("orders")
        helpers.produce("orders", [b"1", b"2", b"3"])
        consumer = make_consumer(broker.bootstrap_servers)
        assert total_orders(consumer, "orders", 3) == 6
        broker.kill()  # kill -9 right after the commit was acknowledged
        consumer.close()
        broker.restart()

        restarted = make_consumer(broker.bootstrap_servers)
        try:
            [committed] = restarted.committed([TopicPartition("orders", 0)], 20)
            assert committed.offset == 3
        finally:
            restarted.close()
