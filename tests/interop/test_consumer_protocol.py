"""confluent-kafka consumers with ``group.protocol=consumer`` (KIP-848): the
broker assigns the partitions; every record is read exactly once, a member
that leaves hands its partitions to the others, and the committed offsets
survive a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC = "orders"
PARTITIONS = 6
PER_PARTITION = 50
# Heartbeats every 500 ms keep the rebalances of the test short.
FAST_HEARTBEATS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
}


def _broker(log_dir: Path) -> BrokerThread:
    return BrokerThread(log_dir, **FAST_HEARTBEATS).start()


def _produce(
    bootstrap: str,
    batch: str,
    topic: str = TOPIC,
    partitions: int = PARTITIONS,
    per_partition: int = PER_PARTITION,
) -> set[bytes]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    values = set()
    for partition in range(partitions):
        for i in range(per_partition):
            value = f"{batch}-{partition}-{i}".encode()
            producer.produce(topic, value=value, partition=partition)
            values.add(value)
    assert producer.flush(20) == 0
    return values


class Member:
    """A consumer that commits each record it reads before reading on."""

    def __init__(self, bootstrap: str, name: str) -> None:
        from confluent_kafka import Consumer

        self.name = name
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "kip848",
                "group.protocol": "consumer",
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([TOPIC])
        self.read: list[tuple[int, bytes]] = []
        self.refused_commits = 0

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is None:
            return
        assert message.error() is None, message.error()
        self.read.append((message.partition(), message.value()))
        self.refused_commits += commit_or_count_stale(self.consumer, message)

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def _poll_until(members: list[Member], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, what
        for member in members:
            member.poll()


def commit_or_count_stale(consumer: Any, message: Any) -> int:
    """Commit the message; 1 if the broker refused it as STALE_MEMBER_EPOCH.

    librdkafka may send a commit with the epoch it had just before a heartbeat
    answer moved it on; Kafka refuses that commit as this broker does, and the
    record is read again only if its partition moves to another member."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        consumer.commit(message=message, asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
            raise
        return 1
    return 0


def assert_read_once(read: list[bytes], expected: set[bytes], refused_commits: int) -> None:
    """Every expected record was read, and any other read (a record read
    again) follows a refused commit: with none refused, exactly the expected."""
    assert expected <= set(read)
    assert len(read) - len(expected) <= refused_commits


def _values(members: list[Member]) -> list[bytes]:
    return [value for member in members for _, value in member.read]


def _split_evenly(members: list[Member]) -> bool:
    assigned = [m.assigned() for m in members]
    every = set().union(*assigned)
    return every == set(range(PARTITIONS)) and sum(map(len, assigned)) == PARTITIONS


def test_consumers_share_a_topic_hand_over_partitions_and_resume_after_restart(
    tmp_path: Path,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    log_dir = tmp_path / "data"
    broker = _broker(log_dir)
    members: list[Member] = []
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
        members = [Member(broker.bootstrap, f"member-{i}") for i in range(3)]
        _poll_until(
            members,
            lambda: _split_evenly(members) and all(len(m.assigned()) == 2 for m in members),
            "three members of two partitions each",
        )

        # The admin client describes it through ConsumerGroupDescribe.
        from confluent_kafka import ConsumerGroupType

        described = admin.describe_consumer_groups(["kip848"])["kip848"].result(20)
        assert described.type == ConsumerGroupType.CONSUMER
        assert described.partition_assignor == "uniform"
        assert sorted(m.client_id for m in described.members) == [
            "member-0",
            "member-1",
            "member-2",
        ]
        listed = admin.list_consumer_groups().result(20)
        assert [(g.group_id, g.type) for g in listed.valid] == [
            ("kip848", ConsumerGroupType.CONSUMER)
        ]

        first = _produce(broker.bootstrap, "first")
        _poll_until(members, lambda: len(_values(members)) >= len(first), "the first batch")
        refused = sum(m.refused_commits for m in members)
        assert_read_once(_values(members), first, refused)  # each record exactly once
        for member in members:
            assert {p for p, _ in member.read} <= member.assigned()

        leaving = members.pop()
        kept = leaving.assigned()
        leaving.close()
        for member in members:
            member.read.clear()
        _poll_until(members, lambda: _split_evenly(members), "the leaver's partitions handed over")
        assert kept <= members[0].assigned() | members[1].assigned()

        second = _produce(broker.bootstrap, "second")
        _poll_until(members, lambda: len(_values(members)) >= len(second), "the second batch")
        refused = sum(m.refused_commits for m in members)
        assert_read_once(_values(members), second, refused)
    finally:
        for member in members:
            member.close()
        broker.stop()

    broker = _broker(log_dir)
    try:
        third = _produce(broker.bootstrap, "third")
        resumed = Member(broker.bootstrap, "after-restart")
        try:
            _poll_until([resumed], lambda: len(resumed.read) >= len(third), "the third batch")
            # Nothing before the committed offsets is read again.
            time.sleep(1)
            for _ in range(20):
                resumed.poll()
            read = [v for _, v in resumed.read]
            assert_read_once(read, third, resumed.refused_commits)
        finally:
            resumed.close()
    finally:
        broker.stop()


def test_a_static_member_that_comes_back_takes_its_partitions_over(tmp_path: Path) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = _broker(tmp_path / "data")
    consumers: list[Any] = []

    def static(instance_id: str) -> Any:
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "static",
                "group.protocol": "consumer",
                "group.instance.id": instance_id,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([TOPIC])
        consumers.append(consumer)
        return consumer

    def poll_until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 30
        while not done():
            assert time.monotonic() < deadline, what
            for consumer in consumers:
                consumer.poll(0.05)

    def assigned(consumer: Any) -> set[int]:
        return {tp.partition for tp in consumer.assignment()}

    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(20)
        first, second = static("one"), static("two")
        poll_until(lambda: len(assigned(first)) == len(assigned(second)) == 2, "a 2-2 split")
        held = assigned(second)
        second.close()  # a static member leaves for now: its partitions wait for it
        consumers.remove(second)
        back = static("two")
        poll_until(lambda: assigned(back) == held, "the same partitions back")
        assert assigned(first) == set(range(4)) - held
    finally:
        for consumer in consumers:
            consumer.close()
        broker.stop()
