"""confluent-kafka consumers migrating a group online (KIP-848): two classic
consumers share a topic; a ``group.protocol=consumer`` consumer joins, the
group becomes a consumer group and the three share the partitions; the
consumer-protocol member leaves, the group becomes classic again and the
classic consumers go on. Each record is read, committed before the next, and
no partition is held by two consumers at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread
from interop.test_consumer_protocol import FAST_HEARTBEATS
from interop.test_consumer_protocol import _produce as produce_values

pytestmark = pytest.mark.interop

TOPIC = "migrating"
GROUP = "migration"
PARTITIONS = 6
PER_PARTITION = 30


def _produce(bootstrap: str, batch: str) -> set[bytes]:
    return produce_values(bootstrap, batch, TOPIC, PARTITIONS, PER_PARTITION)


class Member:
    """A consumer that commits each record it reads before reading on."""

    def __init__(self, bootstrap: str, name: str, protocol: str) -> None:
        from confluent_kafka import Consumer

        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "group.protocol": protocol,
            "client.id": name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if protocol == "classic":
            config |= {
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
            }
        self.name = name
        self.consumer = Consumer(config)
        self.consumer.subscribe([TOPIC])
        self.read: list[bytes] = []
        self.refused_commits = 0

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is None or message.error() is not None:
            return
        from confluent_kafka import KafkaException

        self.read.append(message.value())
        try:
            self.consumer.commit(message=message, asynchronous=False)
        except KafkaException:
            # A commit racing a rebalance is refused (ILLEGAL_GENERATION,
            # REBALANCE_IN_PROGRESS, STALE_MEMBER_EPOCH): the next owner reads
            # the record again, so it is not lost.
            self.refused_commits += 1

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def _poll_until(members: list[Member], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 90
    while not done():
        assert time.monotonic() < deadline, what
        for member in members:
            member.poll()
        held = [p for m in members for p in m.assigned()]
        assert len(held) == len(set(held)), f"a partition held twice: {held}"


def _shared(members: list[Member]) -> bool:
    assigned = [m.assigned() for m in members]
    every = set().union(*assigned)
    return (
        every == set(range(PARTITIONS)) and sum(map(len, assigned)) == PARTITIONS and all(assigned)
    )


def _values(members: list[Member]) -> list[bytes]:
    return [value for member in members for value in member.read]


def _group_type(admin: Any) -> Any:
    listed = admin.list_consumer_groups().result(20)
    (group,) = [g for g in listed.valid if g.group_id == GROUP]
    return group.type


def test_a_group_upgrades_to_the_consumer_protocol_and_back(tmp_path: Path) -> None:
    from confluent_kafka import ConsumerGroupType
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerThread(tmp_path / "data", **FAST_HEARTBEATS).start()
    members: list[Member] = []
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
        classic = [Member(broker.bootstrap, f"classic-{i}", "classic") for i in range(2)]
        members = list(classic)
        first = _produce(broker.bootstrap, "first")
        _poll_until(members, lambda: len(set(_values(members))) >= len(first), "first batch")
        assert _group_type(admin) == ConsumerGroupType.CLASSIC

        # A consumer-protocol member joins: the group converts online.
        modern = Member(broker.bootstrap, "modern", "consumer")
        members.append(modern)
        _poll_until(members, lambda: _shared(members), "three members sharing the topic")
        assert _group_type(admin) == ConsumerGroupType.CONSUMER
        described = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
        assert sorted(m.client_id for m in described.members) == [
            "classic-0",
            "classic-1",
            "modern",
        ]
        second = _produce(broker.bootstrap, "second")
        _poll_until(
            members,
            lambda: second <= set(_values(members)),
            "the second batch read by the three",
        )

        # The consumer-protocol member leaves: the group is classic again.
        members.remove(modern)
        modern.close()
        _poll_until(members, lambda: _shared(members), "the classic members take it all back")
        assert _group_type(admin) == ConsumerGroupType.CLASSIC
        third = _produce(broker.bootstrap, "third")
        _poll_until(
            members, lambda: third <= set(_values(members)), "the third batch, classic again"
        )
        everything = _values(members) + modern.read
        # Nothing lost; committed offsets carry each partition from one owner
        # to the next, so a record is read twice only after a refused commit.
        assert first | second | third <= set(everything)
        refused = sum(m.refused_commits for m in [*members, modern])
        assert len(everything) - len(set(everything)) <= refused
    finally:
        for member in members:
            member.close()
        broker.stop()


def test_the_group_keeps_its_kind_and_members_across_a_kill_9(tmp_path: Path) -> None:
    from confluent_kafka import ConsumerGroupType
    from confluent_kafka.admin import AdminClient, NewTopic

    from process_broker import BrokerProcess

    overrides = [f"{k}={v}" for k, v in FAST_HEARTBEATS.items()]
    broker = BrokerProcess(tmp_path / "data", None, *overrides).start()
    members: list[Member] = []
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)
        members = [Member(broker.bootstrap, f"classic-{i}", "classic") for i in range(2)]
        _poll_until(members, lambda: _shared(members), "two classic members")
        modern = Member(broker.bootstrap, "modern", "consumer")
        members.append(modern)
        _poll_until(members, lambda: _shared(members), "three members")
        assert _group_type(admin) == ConsumerGroupType.CONSUMER

        broker.kill()
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        described = admin.describe_consumer_groups([GROUP])[GROUP].result(20)
        assert described.type == ConsumerGroupType.CONSUMER
        assert sorted(m.client_id for m in described.members) == [
            "classic-0",
            "classic-1",
            "modern",
        ]
        # The members carry on, and the group still downgrades when the last
        # consumer-protocol member leaves.
        batch = _produce(broker.bootstrap, "after-kill")
        _poll_until(members, lambda: batch <= set(_values(members)), "a batch after the kill")
        members.remove(modern)
        modern.close()
        _poll_until(members, lambda: _shared(members), "the classic members take it all back")
        assert _group_type(admin) == ConsumerGroupType.CLASSIC
    finally:
        for member in members:
            member.close()
        broker.stop()
