"""Helpers for the tests of kgroups' own client, and a first test of them.

``kgroups_member`` runs our blocking Consumer as a group member in a thread, with
the same ``Member`` record as the other libraries' members in group_members, so
groups can mix them freely.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.client import Consumer, Producer, RebalanceListener, TopicPartition

from broker_thread import BrokerThread
from interop.group_members import Member, _start, wait_until

PARTITIONS = 6


@pytest.fixture
def quick_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker that allows short session timeouts, for tests that wait on them."""
    b = BrokerThread(tmp_path / "data", group_min_session_timeout_ms=500).start()
    try:
        yield b
    finally:
        b.stop()


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    try:
        for i, value in enumerate(values):
            producer.send(topic, value, key=str(i).encode())
        producer.flush(20)
    finally:
        producer.close()


def consumed(members: list[Member]) -> Counter[bytes]:
    return Counter(v for m in members for _p, _o, v in m.consumed)


def member_config(
    bootstrap: str, group: str, name: str, strategy: str, **extra: Any
) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "partition.assignment.strategy": strategy,
        **extra,
    }


class Timeline:
    """Every hook call of several members, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, list[int]]] = []
        self.lock = threading.Lock()

    def index(self, name: str, hook: str, partitions: list[int]) -> int:
        return self.events.index((name, hook, partitions))


class MemberListener(RebalanceListener):
    """Tracks a member's partitions, and logs every hook call in order."""

    def __init__(self, member: Member, timeline: Timeline | None = None) -> None:
        self.member = member
        self.timeline = timeline or Timeline()
        self.calls: list[tuple[str, list[int]]] = []

    def _log(self, hook: str, partitions: list[TopicPartition]) -> None:
        call = (hook, [p.partition for p in partitions])
        with self.timeline.lock:
            self.calls.append(call)
            self.timeline.events.append((self.member.name, *call))

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self._log("assigned", partitions)
        self.member.assigned |= {p.partition for p in partitions}
        self.member.assignments += 1

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        self._log("revoked", partitions)
        self.member.assigned -= {p.partition for p in partitions}

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self._log("lost", partitions)
        self.member.assigned -= {p.partition for p in partitions}


def kgroups_member(
    bootstrap: str,
    group: str,
    topic: str,
    name: str,
    strategy: str,
    timeline: Timeline | None = None,
    **extra: Any,
) -> Member:
    member = Member(name)
    listener = MemberListener(member, timeline)
    member.listener = listener  # type: ignore[attr-defined]
    config = member_config(bootstrap, group, name, strategy, **extra)

    def run() -> None:
        consumer = Consumer(config)
        consumer.subscribe([topic], listener=listener)
        try:
            while not member.stop.is_set():
                for record in consumer.poll(0.1):
                    member.record(record.partition, record.offset, record.value or b"")
        except Exception as e:  # the test reads it from member.errors
            member.errors.append(repr(e))
        finally:
            consumer.close()

    return _start(member, run)


def test_a_lone_member_reads_every_partition(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "lone")
    values = [f"v{i}".encode() for i in range(500)]
    produce(broker.bootstrap, "lone", values)
    member = kgroups_member(broker.bootstrap, "lone", "lone", "m0", "range")
    try:
        wait_until(lambda: set(consumed([member])) >= set(values), 20, "500 messages")
        assert member.assigned == set(range(PARTITIONS))
        assert max(consumed([member]).values()) == 1
    finally:
        member.close()
    assert not member.errors
