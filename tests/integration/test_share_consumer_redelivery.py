"""Records a share group member got but did not acknowledge go to another
member: when it closes, when it is killed, when it stalls past the record
lock; and the records of a partition it gave away are still acknowledged."""

from __future__ import annotations

import asyncio
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
    b = share_broker(tmp_path)
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


def test_records_of_a_partition_given_away_are_still_acknowledged(broker: BrokerThread) -> None:
    from kgroups.client.admin import Admin

    share_topic(broker, 2)
    produce(broker.port, TOPIC, 0, b"a")
    produce(broker.port, TOPIC, 1, b"b")
    first = share_consumer(broker)
    second: ShareConsumer | None = None
    try:
        assert sorted(r.value or b"" for r in poll_until(first, 2)) == [b"a", b"b"]
        second = share_consumer(broker)
        deadline = time.monotonic() + 20
        while len(first.assignment()) != 1:  # the heartbeats move one partition away
            assert time.monotonic() < deadline
            second.poll(0.1)
        # This poll accepts both records, the one of the partition given away too.
        assert first.poll(0.1) == []
        assert second.poll(2.0) == []  # past the 1.5 s lock: nothing comes again

        async def lags() -> list[tuple[int, int, int | None]]:
            admin = Admin(broker.bootstrap)
            try:
                offsets = await admin.describe_share_group_offsets(GROUP)
            finally:
                await admin.close()
            return [(o.partition, o.start_offset, o.lag) for o in offsets]

        assert asyncio.run(lags()) == [(0, 1, 0), (1, 1, 0)]
    finally:
        first.close()
        if second is not None:
            second.close()
