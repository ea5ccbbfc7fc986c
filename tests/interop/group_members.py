"""Consumer-group members of each client library, run in background threads.

Each member records what it consumed and the partitions it was last assigned,
so tests can check that the group splits a topic between its members and reads
every message once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Member:
    name: str
    assigned: set[int] = field(default_factory=set)
    consumed: list[tuple[int, int, bytes]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    assignments: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.consumed.append((partition, offset, value))

    def close(self, timeout: float = 30) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), f"{self.name} did not stop"


def _start(member: Member, target: Callable[[], None]) -> Member:
    member.thread = threading.Thread(target=target, name=member.name, daemon=True)
    member.thread.start()
    return member


def confluent_member(
    bootstrap: str, group: str, topic: str, name: str, strategy: str, **extra: Any
) -> Member:
    from confluent_kafka import Consumer

    member = Member(name)
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "partition.assignment.strategy": strategy,
        **extra,
    }

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        if strategy == "cooperative-sticky":
            member.assigned |= {p.partition for p in partitions}
        else:
            member.assigned = {p.partition for p in partitions}
        member.assignments += 1

    def on_revoke(consumer: Any, partitions: list[Any]) -> None:
        member.assigned -= {p.partition for p in partitions}

    def run() -> None:
        consumer = Consumer(config)
        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        try:
            while not member.stop.is_set():
                msg = consumer.poll(0.1)
                if msg is None:
                    continue
                if msg.error():
                    member.errors.append(str(msg.error()))
                    continue
                member.record(msg.partition(), msg.offset(), msg.value())
        finally:
            consumer.close()

    return _start(member, run)


def kafka_python_member(
    bootstrap: str, group: str, topic: str, name: str, strategy: str, **extra: Any
) -> Member:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignor = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }[strategy]
    member = Member(name)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_assigned(self, partitions: list[Any]) -> None:
            member.assigned = {p.partition for p in partitions}
            member.assignments += 1

        def on_partitions_revoked(self, partitions: list[Any]) -> None:
            member.assigned = set()

    def run() -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=200,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            partition_assignment_strategy=[assignor],
            **extra,
        )
        # kafka-python may join before its metadata knows the topic, and then
        # leads a rebalance that assigns nothing; fetch the metadata first.
        consumer.partitions_for_topic(topic)
        consumer.subscribe([topic], listener=Listener())
        try:
            while not member.stop.is_set():
                for tp, messages in consumer.poll(100).items():
                    for m in messages:
                        member.record(tp.partition, m.offset, m.value)
        finally:
            consumer.close()

    return _start(member, run)


def aiokafka_member(
    bootstrap: str, group: str, topic: str, name: str, strategy: str, **extra: Any
) -> Member:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[
        strategy
    ]
    member = Member(name)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_assigned(self, assigned: Any) -> None:
            member.assigned = {p.partition for p in assigned}
            member.assignments += 1

        def on_partitions_revoked(self, revoked: Any) -> None:
            member.assigned = set()

    async def consume() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=200,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            partition_assignment_strategy=(assignor,),
            **extra,
        )
        consumer.subscribe([topic], listener=Listener())
        await consumer.start()
        try:
            while not member.stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                for tp, messages in batch.items():
                    for m in messages:
                        member.record(tp.partition, m.offset, m.value)
        finally:
            await consumer.stop()

    return _start(member, lambda: asyncio.run(consume()))


MEMBER_FACTORIES = {
    "confluent": confluent_member,
    "kafka-python": kafka_python_member,
    "aiokafka": aiokafka_member,
}


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def partitions_split(members: list[Member], partitions: int) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    owned = [p for m in members for p in m.assigned]
    return sorted(owned) == list(range(partitions)) and all(m.assigned for m in members)
