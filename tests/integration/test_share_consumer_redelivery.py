"""Records a share group member got but did not acknowledge go to another
member: when it closes, when it is killed, when it stalls past the record
lock (1.5 s here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_brokers import produce
from share_consumers import GROUP, TOPIC, poll_until, share_broker, share_consumer, share_topic

from kgroups.client.share_consumer import ShareConsumer

from broker_thread import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = share_broker(tmp_path, lock_ms=1500)
    try:
        yield b
    finally:
        b.stop()


def test_records_of_a_member_closed_without_acknowledging_go_to_another(
    broker: BrokerThread,
) -> None:
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b")
    quitter = share_consumer(broker, share_acknowledgement_mode="explicit")
    other: ShareConsumer | None = None
    try:
        assert len(poll_until(quitter, 2)) == 2
        quitter.close()
        other = share_consumer(broker)
        again = poll_until(other, 2)
        assert [(r.value, r.delivery_count) for r in again] == [(b"a", 2), (b"b", 2)]
    finally:
        quitter.close()
        if other is not None:
            other.close()


def test_records_of_a_stalled_member_come_again_after_the_lock_duration(
    broker: BrokerThread,
) -> None:
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    stalled = share_consumer(broker)
    other = share_consumer(broker)
    try:
        (first,) = poll_until(stalled, 1)
        started = time.monotonic()
        # The stalled member keeps heartbeating but neither polls nor acknowledges.
        (again,) = poll_until(other, 1)
        assert (again.offset, again.delivery_count) == (first.offset, 2)
        assert time.monotonic() - started >= 1.0  # the lock (1.5 s) ran out first
    finally:
        stalled.close()
        other.close()


_KILLED_MEMBER = textwrap.dedent(
    """
    import sys, time
    from kgroups.client.share_consumer import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]})
    consumer.subscribe(["jobs"])
    got = 0
    while got < 2:
        got += len(consumer.poll(0.2))
    print("got", got, flush=True)
    time.sleep(60)
    """
)


def test_records_of_a_killed_member_go_to_another(broker: BrokerThread) -> None:
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    member = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MEMBER, broker.bootstrap, GROUP],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    other: ShareConsumer | None = None
    try:
        assert member.stdout is not None
        assert member.stdout.readline().strip() == "got 2"
        member.send_signal(signal.SIGKILL)
        member.wait(10)
        other = share_consumer(broker)
        again = poll_until(other, 2)
        assert [(r.value, r.delivery_count) for r in again] == [(b"a", 2), (b"b", 2)]
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(10)
        if other is not None:
            other.close()
