"""Consumer groups of real client libraries against a kgroups broker."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from broker_thread import BrokerThread
from interop.group_members import (
    MEMBER_FACTORIES,
    Member,
    confluent_member,
    kafka_python_member,
    partitions_split,
    wait_until,
)
from process_broker import BrokerProcess

pytestmark = pytest.mark.interop

PARTITIONS = 6


def _create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, v in enumerate(values):
        producer.produce(topic, key=str(i).encode(), value=v)
    assert producer.flush(20) == 0


def _consumed(members: list[Member]) -> Counter[bytes]:
    return Counter(v for m in members for _p, _o, v in m.consumed)


@pytest.mark.parametrize(
    ("client", "strategy"),
    [
        ("confluent", "range"),
        ("confluent", "roundrobin"),
        ("confluent", "cooperative-sticky"),
        ("kafka-python", "range"),
        ("kafka-python", "roundrobin"),
        ("kafka-python", "sticky"),
        ("aiokafka", "range"),
        ("aiokafka", "roundrobin"),
    ],
)
def test_group_shares_a_topic(broker: BrokerThread, client: str, strategy: str) -> None:
    topic = group = f"{client}-{strategy}"
    _create_topic(broker.bootstrap, topic)
    factory = MEMBER_FACTORIES[client]
    members = [factory(broker.bootstrap, group, topic, f"m{i}", strategy) for i in range(3)]
    try:
        wait_until(lambda: partitions_split(members, PARTITIONS), 30, "3 members to split 6")
        first = [f"a{i}".encode() for i in range(600)]
        _produce(broker.bootstrap, topic, first)
        wait_until(lambda: set(_consumed(members)) >= set(first), 30, "600 messages")
        time.sleep(0.5)
        counts = _consumed(members)
        assert all(counts[v] == 1 for v in first), "a message was consumed twice"

        # One member leaves: its partitions move to the two that stay.
        members[0].close()
        stayed = members[1:]
        wait_until(lambda: partitions_split(stayed, PARTITIONS), 30, "2 members to split 6")
        second = [f"b{i}".encode() for i in range(300)]
        _produce(broker.bootstrap, topic, second)
        wait_until(lambda: set(_consumed(stayed)) >= set(second), 30, "300 more messages")
    finally:
        for m in members:
            m.close()


def test_mixed_confluent_and_kafka_python_group(broker: BrokerThread) -> None:
    topic = group = "mixed"
    _create_topic(broker.bootstrap, topic)
    members = [
        confluent_member(broker.bootstrap, group, topic, "ck0", "range"),
        kafka_python_member(broker.bootstrap, group, topic, "kp0", "range"),
        confluent_member(broker.bootstrap, group, topic, "ck1", "range"),
    ]
    try:
        wait_until(lambda: partitions_split(members, PARTITIONS), 40, "a mixed group to form")
        values = [f"m{i}".encode() for i in range(300)]
        _produce(broker.bootstrap, topic, values)
        wait_until(lambda: set(_consumed(members)) >= set(values), 30, "300 messages")
        assert max(_consumed(members).values()) == 1
    finally:
        for m in members:
            m.close()


_KILLABLE_CONSUMER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "partition.assignment.strategy": "range"})
    c.subscribe([sys.argv[3]], on_assign=lambda _c, ps: print("assigned", len(ps), flush=True))
    while True:
        c.poll(0.1)
    """
)


def test_killed_member_loses_its_partitions_after_the_session_timeout(
    broker: BrokerThread,
) -> None:
    topic = group = "killed"
    _create_topic(broker.bootstrap, topic)
    survivor = confluent_member(broker.bootstrap, group, topic, "survivor", "range")
    victim = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE_CONSUMER, broker.bootstrap, group, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert victim.stdout is not None
        wait_until(lambda: len(survivor.assigned) == PARTITIONS // 2, 30, "two members")
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at = time.time()
        wait_until(lambda: len(survivor.assigned) == PARTITIONS, 30, "the survivor to own all")
        # Not before the session timeout (6 s) has passed.
        assert time.time() - killed_at > 4
    finally:
        victim.kill()
        survivor.close()


def test_static_member_restart_keeps_its_partitions_without_rebalance(
    broker: BrokerThread,
) -> None:
    topic = group = "static"
    _create_topic(broker.bootstrap, topic)
    other = confluent_member(
        broker.bootstrap, group, topic, "other", "range", **{"group.instance.id": "other"}
    )
    static = confluent_member(
        broker.bootstrap, group, topic, "s1", "range", **{"group.instance.id": "s1"}
    )
    try:
        wait_until(lambda: partitions_split([other, static], PARTITIONS), 30, "static group")
        before = set(static.assigned)
        rebalances = other.assignments
        static.close()  # a static member does not leave the group on close
        restarted = confluent_member(
            broker.bootstrap, group, topic, "s1b", "range", **{"group.instance.id": "s1"}
        )
        try:
            wait_until(lambda: restarted.assigned == before, 20, "the same partitions back")
            time.sleep(1)
            assert other.assignments == rebalances, "the other member saw a rebalance"
        finally:
            restarted.close()
    finally:
        other.close()
        static.close()


def test_group_survives_broker_restart(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    broker = BrokerProcess(tmp_path / "data").start()
    members: list[Member] = []
    try:
        topic = group = "restart"
        _create_topic(broker.bootstrap, topic)
        members = [
            confluent_member(broker.bootstrap, group, topic, f"r{i}", "range") for i in range(2)
        ]
        wait_until(lambda: partitions_split(members, PARTITIONS), 30, "a stable group")

        def describe() -> tuple[str, list[tuple[str, list[int]]]]:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            d = admin.describe_consumer_groups([group])[group].result(10)
            return str(d.state), sorted(
                (m.member_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
                for m in d.members
            )

        before = describe()
        broker.terminate()
        broker.start()
        wait_until(lambda: describe() == before, 20, "the same description after restart")
    finally:
        for m in members:
            m.close()
        broker.stop()
