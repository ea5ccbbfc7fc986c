"""Auto-commit across rebalances while records keep arriving: at-least-once, no gaps.

Members come and go while a producer writes. Auto-commit commits what poll()
returned before any partition is given up (before every eager rebalance,
before a cooperative revocation, on close), so the next owner starts exactly
where the last one stopped: nothing is lost and -- as long as members leave
gracefully -- nothing is read twice.

Duplicates are possible only in one documented window: a member thrown out of
the group without a chance to commit (its process died, or it spent longer than
max.poll.interval.ms between polls) has its records since the last commit read
again by the next owner. The second test makes a member stall and checks that
the duplicates are exactly within that window.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from kgroups.client import Consumer, Producer

from broker_thread import BrokerThread
from interop.group_members import Member, wait_until
from interop.test_client_support import (
    PARTITIONS,
    consumed,
    create_topic,
    kgroups_member,
    member_config,
)

pytestmark = pytest.mark.interop


class _Writer:
    """Produces numbered values at a steady pace in the background."""

    def __init__(self, bootstrap: str, topic: str, count: int, per_second: int) -> None:
        self.values = [f"v{i}".encode() for i in range(count)]
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
        self._topic = topic
        self._pause = 1 / per_second
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for i, value in enumerate(self.values):
            self._producer.send(self._topic, value, key=str(i).encode())
            time.sleep(self._pause)
        self._producer.flush(20)

    def finish(self) -> None:
        self.thread.join(30)
        self._producer.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_members_come_and_go_without_losing_or_repeating(
    broker: BrokerThread, strategy: str
) -> None:
    topic = group = f"autocommit-{strategy}"
    create_topic(broker.bootstrap, topic)
    writer = _Writer(broker.bootstrap, topic, count=2000, per_second=800)
    extra = {"auto.commit.interval.ms": 1000}  # commits happen mostly on rebalances
    members: list[Member] = []
    try:
        members.append(kgroups_member(broker.bootstrap, group, topic, "m0", strategy, **extra))
        time.sleep(0.5)
        members.append(kgroups_member(broker.bootstrap, group, topic, "m1", strategy, **extra))
        time.sleep(0.5)
        members.append(kgroups_member(broker.bootstrap, group, topic, "m2", strategy, **extra))
        time.sleep(0.5)
        members[0].close()
        time.sleep(0.5)
        members[1].close()
        writer.finish()
        wait_until(lambda: set(consumed(members)) >= set(writer.values), 20, "every value")
    finally:
        for m in members:
            m.close()
    counts = consumed(members)
    assert set(counts) == set(writer.values), "values were lost"
    repeated = sorted(v for v, n in counts.items() if n > 1)
    assert not repeated, f"{len(repeated)} values were read twice: {repeated[:10]}"
    assert all(m.consumed for m in members), "a member never got to consume"
    assert not any(m.errors for m in members)


def test_duplicates_stay_within_the_uncommitted_window(broker: BrokerThread) -> None:
    """A member stalls past max.poll.interval.ms right after a poll; only that
    poll's records -- never committed -- are read again by the next owner."""
    topic = group = "autocommit-stall"
    create_topic(broker.bootstrap, topic)
    writer = _Writer(broker.bootstrap, topic, count=1500, per_second=1000)
    steady = kgroups_member(broker.bootstrap, group, topic, "steady", "range")
    config = member_config(
        broker.bootstrap,
        group,
        "staller",
        "range",
        **{"max.poll.interval.ms": 1000, "auto.commit.interval.ms": 0},
    )
    staller = Consumer(config)
    got: list[tuple[int, int, bytes]] = []
    last_poll: list[bytes] = []
    try:
        staller.subscribe([topic])
        deadline = time.time() + 20
        while not last_poll and time.time() < deadline:
            batch = staller.poll(0.2)
            got += [(r.partition, r.offset, r.value or b"") for r in batch]
            # Auto-commit runs at the start of each poll, so a batch is committed
            # by the poll after it: stall right after one that brought records,
            # once both members share the topic.
            if batch and steady.assigned:
                last_poll = [r.value or b"" for r in batch]
        assert last_poll, "the staller never got records"
        time.sleep(2.5)  # past max.poll.interval.ms: the member leaves the group
        wait_until(lambda: len(steady.assigned) == PARTITIONS, 20, "steady to take over")
        writer.finish()
        wait_until(
            lambda: set(consumed([steady])) | {v for _p, _o, v in got} >= set(writer.values),
            20,
            "every value",
        )
    finally:
        staller.close()
        steady.close()
    counts = Counter(v for _p, _o, v in got) + consumed([steady])
    assert set(counts) == set(writer.values), "values were lost"
    repeated = {v for v, n in counts.items() if n > 1}
    assert repeated, "the stalled member's last poll should have been read again"
    assert repeated <= set(last_poll), "a value outside the uncommitted window was repeated"
