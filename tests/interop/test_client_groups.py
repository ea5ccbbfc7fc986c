"""Groups of kgroups' own consumers, alone and mixed with other Kafka clients."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from broker_thread import BrokerThread
from interop.group_members import (
    Member,
    confluent_member,
    kafka_python_member,
    partitions_split,
    wait_until,
)
from interop.test_client_support import (
    PARTITIONS,
    consumed,
    create_topic,
    kgroups_member,
    produce,
    quick_broker,
)

pytestmark = pytest.mark.interop
__all__ = ["quick_broker"]  # a fixture, used by name


def _close(members: list[Member]) -> None:
    for m in members:
        m.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_our_consumers_share_a_topic(broker: BrokerThread, strategy: str) -> None:
    topic = group = f"ours-{strategy}"
    create_topic(broker.bootstrap, topic)
    members = [kgroups_member(broker.bootstrap, group, topic, f"m{i}", strategy) for i in range(3)]
    try:
        wait_until(lambda: partitions_split(members, PARTITIONS), 20, "3 members to split 6")
        first = [f"a{i}".encode() for i in range(600)]
        produce(broker.bootstrap, topic, first)
        wait_until(lambda: set(consumed(members)) >= set(first), 20, "600 messages")
        assert max(consumed(members).values()) == 1, "a message was consumed twice"

        # A member leaves: the two that stay split its partitions, and start where
        # it committed, so nothing is read twice.
        members[0].close()
        stayed = members[1:]
        wait_until(lambda: partitions_split(stayed, PARTITIONS), 20, "2 members to split 6")
        second = [f"b{i}".encode() for i in range(300)]
        produce(broker.bootstrap, topic, second)
        wait_until(lambda: set(consumed(stayed)) >= set(second), 20, "300 more messages")
        assert max(consumed(members).values()) == 1, "a message was consumed twice"
    finally:
        _close(members)
    assert not any(m.errors for m in members)


@pytest.mark.parametrize(
    ("strategy", "others", "ours_first"),
    [
        ("range", ["confluent", "kafka-python"], True),
        ("range", ["kafka-python", "confluent"], False),
        ("cooperative-sticky", ["confluent", "confluent"], True),
        ("cooperative-sticky", ["confluent", "confluent"], False),
    ],
)
def test_mixed_group(
    broker: BrokerThread, strategy: str, others: list[str], ours_first: bool
) -> None:
    """Whoever joins first leads: our member as leader, then as follower."""
    topic = group = f"mixed-{strategy}-{ours_first}"
    create_topic(broker.bootstrap, topic)
    factories = {"confluent": confluent_member, "kafka-python": kafka_python_member}
    members: list[Member] = []
    try:
        if ours_first:
            members.append(kgroups_member(broker.bootstrap, group, topic, "ours", strategy))
            wait_until(lambda: len(members[0].assigned) == PARTITIONS, 20, "our member alone")
        for i, kind in enumerate(others):
            members.append(factories[kind](broker.bootstrap, group, topic, f"{kind}{i}", strategy))
            wait_until(lambda: members[-1].assignments > 0, 30, f"{kind}{i} to join")
        if not ours_first:
            members.append(kgroups_member(broker.bootstrap, group, topic, "ours", strategy))
        ours = members[0] if ours_first else members[-1]
        wait_until(lambda: partitions_split(members, PARTITIONS), 40, "a mixed group to form")
        values = [f"m{i}".encode() for i in range(300)]
        produce(broker.bootstrap, topic, values)
        wait_until(lambda: set(consumed(members)) >= set(values), 20, "300 messages")
        assert max(consumed(members).values()) == 1
        assert ours.consumed, "our member got no records"

        # Our member leaves; the others take its partitions over.
        ours.close()
        rest = [m for m in members if m is not ours]
        wait_until(lambda: partitions_split(rest, PARTITIONS), 30, "the rest to regroup")
    finally:
        _close(members)
    assert not any(m.errors for m in members)


_KILLABLE_CONSUMER = textwrap.dedent(
    """
    import sys
    from kgroups.client import Consumer, RebalanceListener

    class Report(RebalanceListener):
        def on_partitions_assigned(self, partitions):
            print("assigned", len(partitions), flush=True)

    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                  "session.timeout.ms": 2000, "heartbeat.interval.ms": 200,
                  "partition.assignment.strategy": "range"})
    c.subscribe([sys.argv[3]], listener=Report())
    while True:
        c.poll(0.1)
    """
)


def test_killed_member_loses_its_partitions_after_the_session_timeout(
    quick_broker: BrokerThread,
) -> None:
    broker = quick_broker
    topic = group = "killed"
    create_topic(broker.bootstrap, topic)
    survivor = kgroups_member(
        broker.bootstrap,
        group,
        topic,
        "survivor",
        "range",
        **{"session.timeout.ms": 2000, "heartbeat.interval.ms": 200},
    )
    victim = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE_CONSUMER, broker.bootstrap, group, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(survivor.assigned) == PARTITIONS // 2, 30, "two members")
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at = time.time()
        wait_until(lambda: len(survivor.assigned) == PARTITIONS, 15, "the survivor to own all")
        # Not before the victim's session timeout (2 s) has passed.
        assert time.time() - killed_at > 1.5
        values = [f"k{i}".encode() for i in range(200)]
        produce(broker.bootstrap, topic, values)
        wait_until(lambda: set(consumed([survivor])) >= set(values), 20, "200 messages")
    finally:
        victim.kill()
        survivor.close()
    assert not survivor.errors


def test_static_member_restart_keeps_its_partitions_without_rebalance(
    broker: BrokerThread,
) -> None:
    topic = group = "static"
    create_topic(broker.bootstrap, topic)
    other = kgroups_member(
        broker.bootstrap, group, topic, "other", "range", **{"group.instance.id": "other"}
    )
    static = kgroups_member(
        broker.bootstrap, group, topic, "s1", "range", **{"group.instance.id": "s1"}
    )
    members = [other, static]
    try:
        wait_until(lambda: partitions_split(members, PARTITIONS), 20, "a static group")
        before = set(static.assigned)
        rebalances = other.assignments
        static.close()  # a static member does not leave the group on close
        restarted = kgroups_member(
            broker.bootstrap, group, topic, "s1b", "range", **{"group.instance.id": "s1"}
        )
        members.append(restarted)
        wait_until(lambda: restarted.assigned == before, 20, "the same partitions back")
        time.sleep(1)
        assert other.assignments == rebalances, "the other member saw a rebalance"
    finally:
        _close(members)
    assert not any(m.errors for m in members)


def test_a_second_static_member_with_the_same_id_fences_the_first(broker: BrokerThread) -> None:
    topic = group = "fenced"
    create_topic(broker.bootstrap, topic)
    first = kgroups_member(
        broker.bootstrap, group, topic, "first", "range", **{"group.instance.id": "same"}
    )
    second: Member | None = None
    try:
        wait_until(lambda: len(first.assigned) == PARTITIONS, 20, "the first member to join")
        second = kgroups_member(
            broker.bootstrap, group, topic, "second", "range", **{"group.instance.id": "same"}
        )
        wait_until(lambda: len(second.assigned) == PARTITIONS, 20, "the second to take over")
        wait_until(lambda: bool(first.errors), 20, "the first member to be fenced")
        assert "FencedInstanceIdError" in first.errors[0]
    finally:
        first.stop.set()
        assert first.thread is not None
        first.thread.join(20)
        if second is not None:
            second.close()
