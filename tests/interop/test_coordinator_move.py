"""confluent-kafka consumers in a group while the group's `__consumer_offsets`
partition moves away from the broker and back: they keep consuming, find the
coordinator again, and keep every offset they committed before the move."""

from __future__ import annotations

import threading
import time

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

GROUP = "moving"
TOPIC = "moving"
PARTITIONS = 4


class Member:
    """A consumer in a thread that commits each message it reads, synchronously."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 200,
            }
        )
        self.read: list[tuple[int, int]] = []  # partition, offset
        self.acked: dict[int, int] = {}  # committed offsets the broker acknowledged
        self.failed_commits = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        c = self.consumer
        c.subscribe([TOPIC])
        while not self.stopping.is_set():
            m = c.poll(0.1)
            if m is None or m.error() is not None:
                continue
            self.read.append((m.partition(), m.offset()))
            try:
                c.commit(
                    offsets=[TopicPartition(TOPIC, m.partition(), m.offset() + 1)],
                    asynchronous=False,
                )
                self.acked[m.partition()] = m.offset() + 1
            except KafkaException:
                self.failed_commits += 1  # the next commit carries it
        c.close()


def _produce(bootstrap: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(20) == 0


def committed(bootstrap: str) -> dict[int, int]:
    """The group's committed offsets, as a new member would find them."""
    from confluent_kafka import Consumer, TopicPartition

    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        found = checker.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=20)
    finally:
        checker.close()
    return {tp.partition: tp.offset for tp in found}


def _wait_for(done: object, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_consumers_keep_consuming_and_their_offsets_when_the_coordinator_moves(
    broker: BrokerThread,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
    _produce(bootstrap, 200)
    members = [Member(bootstrap), Member(bootstrap)]
    for m in members:
        m.thread.start()

    def unique() -> set[tuple[int, int]]:
        return {(p, o) for m in members for p, o in m.read}

    def acked() -> dict[int, int]:
        return {p: max(m.acked.get(p, 0) for m in members) for p in range(PARTITIONS)}

    try:
        _wait_for(lambda: acked() == dict.fromkeys(range(PARTITIONS), 50), "first commits")
        assert broker.broker is not None
        runtime = broker.broker.coordinator
        partition = broker.call(lambda: runtime.partition_for(GROUP))
        read_before = [len(m.read) for m in members]
        broker.call(lambda: runtime.partition_lost(partition))
        time.sleep(1.5)  # the members' heartbeats are told to look for a coordinator
        broker.call(lambda: runtime.partition_gained(partition, 1))
        assert committed(bootstrap) == dict.fromkeys(range(PARTITIONS), 50)
        _produce(bootstrap, 200)
        _wait_for(lambda: len(unique()) >= 400, "messages after the coordinator is back")
        _wait_for(lambda: acked() == dict.fromkeys(range(PARTITIONS), 100), "later commits")
    finally:
        for m in members:
            m.stopping.set()
        for m in members:
            m.thread.join(30)

    # Nothing read again after the move: the members kept their positions.
    assert len(unique()) == 400
    read_after = [r for m, n in zip(members, read_before, strict=True) for r in m.read[n:]]
    assert sorted(read_after) == [(p, o) for p in range(PARTITIONS) for o in range(50, 100)]
    assert committed(bootstrap) == dict.fromkeys(range(PARTITIONS), 100)
