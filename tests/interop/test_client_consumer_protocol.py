"""kgroups' own consumer with ``group.protocol=consumer`` (KIP-848) against a
kgroups broker: members share a topic while others join and leave, each record
is read once, offsets survive a member, a static member gets its partitions
back, and a confluent-kafka member of the same protocol shares the group."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.client import Consumer, TopicPartition

from broker_thread import BrokerThread
from interop.group_members import Member, _start, wait_until
from interop.test_client_support import (
    PARTITIONS,
    MemberListener,
    consumed,
    create_topic,
    kgroups_member,
    produce,
)

pytestmark = pytest.mark.interop


@pytest.fixture
def fast_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """Heartbeats every 300 ms keep the rebalances of a test short."""
    b = BrokerThread(
        tmp_path / "data",
        group_consumer_heartbeat_interval_ms=300,
        group_consumer_min_heartbeat_interval_ms=100,
    ).start()
    try:
        yield b
    finally:
        b.stop()


def _config(bootstrap: str, group: str, name: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": name,
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 200,
        **extra,
    }


def _member(bootstrap: str, group: str, topic: str, name: str, **extra: Any) -> Member:
    member = Member(name)
    listener = MemberListener(member)
    member.listener = listener  # type: ignore[attr-defined]

    def run() -> None:
        consumer = Consumer(_config(bootstrap, group, name, **extra))
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


def _confluent_member(bootstrap: str, group: str, topic: str, name: str) -> Member:
    from confluent_kafka import Consumer as ConfluentConsumer

    member = Member(name)

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        member.assigned |= {p.partition for p in partitions}

    def on_revoke(consumer: Any, partitions: list[Any]) -> None:
        member.assigned -= {p.partition for p in partitions}

    def run() -> None:
        consumer = ConfluentConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 200,
            }
        )
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


def _split(members: list[Member]) -> bool:
    assigned = [m.assigned for m in members]
    return (
        all(assigned)
        and set().union(*assigned) == set(range(PARTITIONS))
        and sum(map(len, assigned)) == PARTITIONS
    )


def _calls(member: Member) -> list[tuple[str, list[int]]]:
    return list(member.listener.calls)  # type: ignore[attr-defined]


def test_members_share_a_topic_while_one_joins_and_one_leaves(fast_broker: BrokerThread) -> None:
    bootstrap = fast_broker.bootstrap
    topic = group = "shared"
    create_topic(bootstrap, topic)
    members = [_member(bootstrap, group, topic, f"m{i}") for i in range(2)]
    try:
        wait_until(lambda: _split(members), 30, "2 members to split 6 partitions")
        first = [f"a{i}".encode() for i in range(300)]
        produce(bootstrap, topic, first)
        wait_until(lambda: set(consumed(members)) >= set(first), 30, "the first batch")

        members.append(_member(bootstrap, group, topic, "late"))
        wait_until(lambda: _split(members), 30, "3 members to split 6 partitions")
        second = [f"b{i}".encode() for i in range(300)]
        produce(bootstrap, topic, second)
        wait_until(lambda: set(consumed(members)) >= set(second), 30, "the second batch")

        members[0].close()
        stayed = members[1:]
        wait_until(lambda: _split(stayed), 30, "2 members to take the leaver's partitions")
        third = [f"c{i}".encode() for i in range(300)]
        produce(bootstrap, topic, third)
        wait_until(lambda: set(consumed(stayed)) >= set(third), 30, "the third batch")
        assert max(consumed(members).values()) == 1, "a record was read twice"
        assert set(consumed(members)) == set(first + second + third)
    finally:
        for m in members:
            m.close()
    assert not any(m.errors for m in members)
    for m in members:
        calls = _calls(m)
        # Incremental: partitions are revoked only when some move, never all
        # at once to be assigned again; nothing was lost.
        assert calls[0][0] == "assigned"
        assert all(partitions for hook, partitions in calls if hook == "revoked")
        assert not [c for c in calls if c[0] == "lost"]
    # The late member only ever gained partitions until it was told to close.
    assert all(hook == "assigned" for hook, _ in _calls(members[2])[:-1])


def test_a_new_member_starts_where_a_closed_one_committed(fast_broker: BrokerThread) -> None:
    bootstrap = fast_broker.bootstrap
    topic = group = "resume"
    create_topic(bootstrap, topic)
    first = [f"a{i}".encode() for i in range(120)]
    produce(bootstrap, topic, first)

    def read_all(consumer: Consumer, count: int) -> list[bytes]:
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            values += [r.value or b"" for r in consumer.poll(0.1)]
        return values

    consumer = Consumer(_config(bootstrap, group, "first", **{"enable.auto.commit": False}))
    try:
        consumer.subscribe([topic])
        assert sorted(read_all(consumer, len(first))) == sorted(first)
        consumer.commit()  # OffsetCommit v9 with the member id and epoch
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)])
        assert sum(om.offset for om in committed.values() if om is not None) == len(first)
    finally:
        consumer.close()

    second = [f"b{i}".encode() for i in range(60)]
    produce(bootstrap, topic, second)
    consumer = Consumer(_config(bootstrap, group, "second"))
    try:
        consumer.subscribe([topic])
        values = read_all(consumer, len(second))
        time.sleep(0.5)
        values += [r.value or b"" for r in consumer.poll(0.5)]
        assert sorted(values) == sorted(second)
    finally:
        consumer.close()


def test_a_static_member_gets_its_partitions_back(fast_broker: BrokerThread) -> None:
    bootstrap = fast_broker.bootstrap
    topic = group = "static"
    create_topic(bootstrap, topic)
    dynamic = _member(bootstrap, group, topic, "dynamic")
    static = _member(bootstrap, group, topic, "static", **{"group.instance.id": "s1"})
    try:
        wait_until(lambda: _split([dynamic, static]), 30, "2 members to split 6 partitions")
        owned = set(static.assigned)
        static.close()  # leaves with epoch -2: its partitions wait for it
        time.sleep(2)
        assert dynamic.assigned == set(range(PARTITIONS)) - owned
        back = _member(bootstrap, group, topic, "static-again", **{"group.instance.id": "s1"})
        try:
            wait_until(lambda: back.assigned == owned, 30, "the static member's partitions")
            assert dynamic.assigned == set(range(PARTITIONS)) - owned
        finally:
            back.close()
        assert not back.errors
    finally:
        dynamic.close()
        static.close()
    assert not dynamic.errors and not static.errors


def test_a_confluent_member_and_ours_share_a_group(fast_broker: BrokerThread) -> None:
    bootstrap = fast_broker.bootstrap
    topic = group = "mixed"
    create_topic(bootstrap, topic)
    ours = _member(bootstrap, group, topic, "ours")
    theirs = _confluent_member(bootstrap, group, topic, "theirs")
    members = [ours, theirs]

    try:
        wait_until(lambda: _split(members), 30, "both members to split 6 partitions")
        values = [f"m{i}".encode() for i in range(300)]
        produce(bootstrap, topic, values)
        wait_until(lambda: set(consumed(members)) >= set(values), 30, "every record")
        assert max(consumed(members).values()) == 1, "a record was read twice"
        assert {p for p, _o, _v in ours.consumed} <= ours.assigned
        assert {p for p, _o, _v in theirs.consumed} == set(range(PARTITIONS)) - ours.assigned
    finally:
        for m in members:
            m.close()
    assert not ours.errors and not theirs.errors


def test_a_member_that_stops_polling_loses_its_partitions_and_rejoins(
    fast_broker: BrokerThread,
) -> None:
    bootstrap = fast_broker.bootstrap
    topic = group = "slow"
    create_topic(bootstrap, topic)
    calls: list[tuple[str, list[int]]] = []

    class Listener:
        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            calls.append(("assigned", [p.partition for p in partitions]))

        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            calls.append(("revoked", [p.partition for p in partitions]))

        def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
            calls.append(("lost", [p.partition for p in partitions]))

    consumer = Consumer(_config(bootstrap, group, "slow", **{"max.poll.interval.ms": 1500}))
    try:
        consumer.subscribe([topic], listener=Listener())
        every = list(range(PARTITIONS))
        wait_until(lambda: bool(consumer.poll(0.1)) or calls == [("assigned", every)], 30, "join")
        member_id = consumer.member_id
        time.sleep(3)  # no poll: the member leaves the group
        values = [f"v{i}".encode() for i in range(60)]
        produce(bootstrap, topic, values)
        read: list[bytes] = []
        wait_until(
            lambda: read.extend(r.value or b"" for r in consumer.poll(0.1)) or len(read) >= 60,
            30,
            "the records after rejoining",
        )
        assert calls == [("assigned", every), ("lost", every), ("assigned", every)]
        assert consumer.member_id == member_id
        assert sorted(read) == sorted(values)
    finally:
        consumer.close()


def test_a_pattern_is_resolved_by_the_broker_and_picks_up_a_new_topic(
    fast_broker: BrokerThread,
) -> None:
    bootstrap = fast_broker.bootstrap
    create_topic(bootstrap, "events-a", 2)
    create_topic(bootstrap, "other", 2)  # does not match: never assigned
    read: dict[str, set[bytes]] = {}
    consumer = Consumer(_config(bootstrap, "by-pattern", "pattern"))

    def read_until(topic: str, values: list[bytes]) -> None:
        # A new topic is matched within Kafka's 10 s minimum refresh plus a heartbeat.
        deadline = time.monotonic() + 60
        while not set(values) <= read.get(topic, set()):
            assert time.monotonic() < deadline, f"the records of {topic}"
            for r in consumer.poll(0.1):
                read.setdefault(r.topic, set()).add(r.value or b"")

    try:
        consumer.subscribe(pattern="events-.*")
        produce(bootstrap, "other", [b"not-for-us"])
        a = [f"a{i}".encode() for i in range(20)]
        produce(bootstrap, "events-a", a)
        read_until("events-a", a)
        create_topic(bootstrap, "events-b", 2)
        b = [f"b{i}".encode() for i in range(20)]
        produce(bootstrap, "events-b", b)
        read_until("events-b", b)
        assert {tp.topic for tp in consumer.assignment()} == {"events-a", "events-b"}
        assert set(read) == {"events-a", "events-b"}
    finally:
        consumer.close()


def test_a_classic_member_joins_the_consumer_group_of_ours(fast_broker: BrokerThread) -> None:
    """The broker serves a classic member inside a consumer group (KIP-848's
    migration path): both protocols of our consumer share one group."""
    bootstrap = fast_broker.bootstrap
    topic = group = "two-protocols"
    create_topic(bootstrap, topic)
    ours = _member(bootstrap, group, topic, "consumer-protocol")
    members = [ours]
    try:
        wait_until(lambda: ours.assigned == set(range(PARTITIONS)), 30, "the first member")
        classic = kgroups_member(bootstrap, group, topic, "classic", "cooperative-sticky")
        members.append(classic)
        wait_until(lambda: _split(members), 30, "both members to split 6 partitions")
        values = [f"v{i}".encode() for i in range(300)]
        produce(bootstrap, topic, values)
        wait_until(lambda: set(consumed(members)) >= set(values), 30, "every record")
        assert max(consumed(members).values()) == 1, "a record was read twice"
    finally:
        for m in members:
            m.close()
    assert not any(m.errors for m in members)
