"""confluent-kafka consumers with ``group.protocol=consumer`` (KIP-848) through
faults: members that join, leave and die without leaving; a static member that
restarts; a broker killed with SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread
from interop.test_consumer_protocol import (
    FAST_HEARTBEATS,
    PARTITIONS,
    TOPIC,
    _poll_until,
    _produce,
    _values,
    assert_read_once,
    commit_or_count_stale,
)
from process_broker import BrokerProcess

pytestmark = pytest.mark.interop

GROUP = "faults"
# A member that dies is noticed within seconds rather than Kafka's 45.
SHORT_SESSIONS = {
    **FAST_HEARTBEATS,
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "1000",
}

# A consumer in its own process, to be killed with SIGKILL: it commits each
# record, then prints its partition and value.
_CHILD = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "group.protocol": "consumer", "client.id": "child",
              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
print("started", flush=True)
while True:
    m = c.poll(0.05)
    if m is None or m.error() is not None:
        continue
    c.commit(message=m, asynchronous=False)
    print(m.partition(), m.value().decode(), flush=True)
"""


class Committer:
    """A consumer in this process that commits each record it reads before
    reading on, and sees every change of its assignment."""

    def __init__(self, bootstrap: str, name: str, **config: Any) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "group.protocol": "consumer",
                "client.id": name,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **config,
            }
        )
        self.revoked: list[set[int]] = []
        self.consumer.subscribe(
            [TOPIC],
            on_revoke=lambda _c, parts: self._revoked(parts),
            on_lost=lambda _c, parts: self._revoked(parts),
        )
        self.read: list[tuple[int, bytes]] = []
        self.refused_commits = 0

    def _revoked(self, parts: list[Any]) -> None:
        if parts:
            self.revoked.append({tp.partition for tp in parts})

    def poll(self) -> None:
        message = self.consumer.poll(0.05)
        if message is None or message.error() is not None:
            return
        self.read.append((message.partition(), message.value()))
        self.refused_commits += commit_or_count_stale(self.consumer, message)

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


class ChildCommitter:
    """The same in a child process; what it read and committed comes from its
    output."""

    def __init__(self, bootstrap: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, bootstrap, GROUP, TOPIC],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "started\n"
        self.read: list[tuple[int, bytes]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            partition, value = line.split()
            self.read.append((int(partition), value.encode()))

    def poll(self) -> None:
        time.sleep(0.01)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)


def _create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(20)


def _shares(group_size: int, *members: Committer) -> Callable[[], bool]:
    """Each of `members` holds its share of the topic in a group of `group_size`."""
    return lambda: all(len(m.assigned()) == PARTITIONS // group_size for m in members)


def test_every_record_is_read_once_while_members_join_leave_and_die(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data", **SHORT_SESSIONS).start()
    first: Committer | None = None
    joiner: Committer | None = None
    child: ChildCommitter | None = None
    produced: list[bytes] = []

    def read_all(members: list[Any], what: str) -> None:
        _poll_until(members, lambda: len(_values(everyone)) >= len(produced), what)

    try:
        _create_topic(broker.bootstrap)
        first = Committer(broker.bootstrap, "first")
        child = ChildCommitter(broker.bootstrap)
        everyone: list[Any] = [first, child]
        _poll_until([first], _shares(2, first), "first and child share the topic")
        produced += _produce(broker.bootstrap, "two-members")
        read_all([first, child], "the batch read by two members")

        joiner = Committer(broker.bootstrap, "joiner")
        everyone.append(joiner)
        _poll_until([first, joiner], _shares(3, first, joiner), "a third of the topic each")
        produced += _produce(broker.bootstrap, "three-members")
        read_all([first, joiner, child], "the batch read by three members")

        # Dies without leaving, every record it read committed: its partitions
        # move once its session expires, and resume from its commits.
        child.kill()
        produced += _produce(broker.bootstrap, "after-kill")
        read_all([first, joiner], "the dead member's partitions taken over")
        assert first.assigned() | joiner.assigned() == set(range(PARTITIONS))

        joiner.close()  # what it read stays in `everyone`
        joiner = None
        produced += _produce(broker.bootstrap, "after-leave")
        read_all([first], "the leaver's partitions taken over")
        assert first.assigned() == set(range(PARTITIONS))

        time.sleep(1)  # nothing more arrives: no record was read twice
        for _ in range(20):
            first.poll()
        refused = sum(getattr(m, "refused_commits", 0) for m in everyone)
        assert_read_once(_values(everyone), set(produced), refused)
    finally:
        if child is not None:
            child.kill()
        for member in (first, joiner):
            if member is not None:
                member.close()
        broker.stop()


def test_a_static_member_restarts_without_moving_the_others_partitions(tmp_path: Path) -> None:
    broker = BrokerThread(tmp_path / "data", **SHORT_SESSIONS).start()
    members: list[Committer] = []

    def static(instance_id: str) -> Committer:
        member = Committer(broker.bootstrap, instance_id, **{"group.instance.id": instance_id})
        members.append(member)
        return member

    try:
        _create_topic(broker.bootstrap)
        one, two, three = static("one"), static("two"), static("three")
        _poll_until(members, _shares(3, one, two, three), "two partitions each")
        held = {name: m.assigned() for name, m in (("one", one), ("three", three))}
        held_by_two = two.assigned()
        one.revoked.clear()  # what moved while the group formed
        three.revoked.clear()

        two.close()  # within its session: its partitions wait for it
        members.remove(two)
        seen: list[set[int]] = []

        def back_with_its_partitions() -> bool:
            seen.extend([one.assigned(), three.assigned()])
            return back.assigned() == held_by_two

        back = static("two")
        _poll_until(members, back_with_its_partitions, "the same partitions back")
        for _ in range(40):  # and the others keep theirs afterwards too
            for member in members:
                member.poll()
            seen.extend([one.assigned(), three.assigned()])
        assert {frozenset(s) for s in seen} == {frozenset(held["one"]), frozenset(held["three"])}
        assert one.revoked == three.revoked == []
        assert (one.assigned(), three.assigned()) == (held["one"], held["three"])
    finally:
        for member in members:
            member.close()
        broker.stop()


def test_commits_survive_a_broker_killed_and_the_group_resumes_from_them(
    tmp_path: Path,
) -> None:
    overrides = (f"{key}={value}" for key, value in FAST_HEARTBEATS.items())
    broker = BrokerProcess(tmp_path / "data", None, *overrides).start()
    reconnect_fast = {"reconnect.backoff.max.ms": 500}
    member: Committer | None = None
    try:
        _create_topic(broker.bootstrap)
        member = Committer(broker.bootstrap, "before", **reconnect_fast)
        first = _produce(broker.bootstrap, "before-kill")
        _poll_until([member], lambda: len(member.read) >= len(first), "the first batch")

        broker.kill()  # the member lives on through the broker's death
        broker.start()
        second = _produce(broker.bootstrap, "after-first-kill")
        _poll_until([member], lambda: len(member.read) >= len(first | second), "the second batch")
        read = [v for _, v in member.read]
        assert_read_once(read, first | second, member.refused_commits)
        member.close()
        member = None

        broker.kill()
        broker.start()
        third = _produce(broker.bootstrap, "after-second-kill")
        member = Committer(broker.bootstrap, "after", **reconnect_fast)
        _poll_until([member], lambda: len(member.read) >= len(third), "the third batch")
        time.sleep(1)  # nothing committed is read again
        for _ in range(20):
            member.poll()
        read = [v for _, v in member.read]
        assert_read_once(read, third, member.refused_commits)
    finally:
        if member is not None:
            member.close()
        broker.stop()


def test_a_stopped_group_restarts_under_the_other_protocol_from_its_commits(
    tmp_path: Path,
) -> None:
    broker = BrokerThread(tmp_path / "data", **FAST_HEARTBEATS).start()
    try:
        _create_topic(broker.bootstrap)
        for batch, protocol in enumerate(("classic", "consumer", "classic")):
            produced = _produce(broker.bootstrap, f"batch-{batch}")
            member = Committer(broker.bootstrap, protocol, **{"group.protocol": protocol})
            try:
                done = lambda m=member, p=produced: len(m.read) >= len(p)  # noqa: E731
                _poll_until([member], done, protocol)
                time.sleep(0.5)  # nothing committed under the other protocol comes again
                for _ in range(10):
                    member.poll()
                assert sorted(v for _, v in member.read) == sorted(produced)
            finally:
                member.close()
    finally:
        broker.stop()
