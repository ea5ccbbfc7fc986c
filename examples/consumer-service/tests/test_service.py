from __future__ import annotations

from confluent_kafka import TopicPartition
from service import make_consumer, total_orders

from kgroups.testing import EmbeddedBroker
from kgroups.testing.helpers import KafkaHelpers


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


def test_kill_9_mid_commits_keeps_every_acknowledged_commit(tmp_path):
    """A consumer commits in a loop while the broker is killed: after the
    restart the group's offset is at least the last one the broker acknowledged."""
    import threading

    from confluent_kafka import Consumer

    with EmbeddedBroker(tmp_path / "data", process=True) as broker:
        KafkaHelpers(broker.bootstrap_servers).create_topic("orders")
        config = {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "billing",
            "enable.auto.commit": False,
        }
        consumer = Consumer(config)
        acknowledged = []
        killed = threading.Event()

        def commit_until_killed():
            offset = 0
            while not killed.is_set():
                offset += 1
                # Blocks across the crash: librdkafka retries until the broker is back.
                consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
                acknowledged.append(offset)

        committer = threading.Thread(target=commit_until_killed)
        committer.start()
        while len(acknowledged) < 20 and committer.is_alive():
            committer.join(0.01)
        broker.kill()  # with a commit in flight
        killed.set()
        broker.restart()
        committer.join(30)
        assert not committer.is_alive() and len(acknowledged) >= 20
        consumer.close()

        restarted = Consumer(config)
        try:
            [committed] = restarted.committed([TopicPartition("orders", 0)], 20)
            # Every acknowledged commit survived; the one in flight may have too.
            assert acknowledged[-1] <= committed.offset <= acknowledged[-1] + 1
        finally:
            restarted.close()


def test_totals_survive_a_coordinator_move(kafka_broker, kafka_helpers):
    """The group's coordinator fails over between two batches: the service
    finds it again and its commits keep going to the group."""
    kafka_helpers.create_topic("failover-orders")
    kafka_helpers.produce("failover-orders", [b"1", b"2"])
    consumer = make_consumer(kafka_broker.bootstrap_servers, "failover")
    try:
        assert total_orders(consumer, "failover-orders", 2) == 3
        kafka_broker.faults.move_coordinator("failover")
        kafka_helpers.produce("failover-orders", [b"4"])
        assert total_orders(consumer, "failover-orders", 1) == 4
    finally:
        consumer.close()
    restarted = make_consumer(kafka_broker.bootstrap_servers, "failover")
    try:
        [committed] = restarted.committed([TopicPartition("failover-orders", 0)], 20)
        assert committed.offset == 3
    finally:
        restarted.close()


def test_commit_waits_out_a_coordinator_that_is_moving(kafka_broker, kafka_helpers):
    """The coordinator answers NOT_COORDINATOR for a while, as during a
    failover: the service's synchronous commit waits it out."""
    import threading

    kafka_helpers.create_topic("moving-orders")
    kafka_helpers.produce("moving-orders", [b"1"])
    consumer = make_consumer(kafka_broker.bootstrap_servers, "moving")
    try:
        assert total_orders(consumer, "moving-orders", 1) == 1
        kafka_broker.faults.coordinator_error(group="moving", error="NOT_COORDINATOR")
        threading.Timer(1.0, kafka_broker.faults.clear).start()
        kafka_helpers.produce("moving-orders", [b"5"])
        assert total_orders(consumer, "moving-orders", 1) == 5
        [committed] = consumer.committed([TopicPartition("moving-orders", 0)], 20)
        assert committed.offset == 2
    finally:
        consumer.close()
