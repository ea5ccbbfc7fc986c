"""kgroups' ShareConsumer against a thread broker: members of one share group
split the records, and what they acknowledge (or fail to) decides what is
delivered again."""

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
from cluster_brokers import create_topic, produce
from config_admin_wire import SET, incremental

from kgroups.client.async_share_consumer import AsyncShareConsumer
from kgroups.client.share_consumer import ShareConsumer
from kgroups.client.share_record import AcknowledgeType, ShareConsumerRecord
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

TOPIC = "jobs"
GROUP = "workers"
_GROUP_RESOURCE = 32


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path / "data",
        group_share_heartbeat_interval_ms=200,
        group_share_min_heartbeat_interval_ms=100,
        group_share_record_lock_duration_ms=1500,
        group_share_min_record_lock_duration_ms=1000,
    ).start()
    try:
        yield b
    finally:
        b.stop()


def _topic(broker: BrokerThread, partitions: int) -> None:
    assert create_topic(broker.port, TOPIC, partitions) is ErrorCode.none
    # The records come before the group's first fetch: start from them.
    reset = [("share.auto.offset.reset", SET, "earliest")]
    assert incremental(broker.port, [(_GROUP_RESOURCE, GROUP, reset)])[0][1] is ErrorCode.none


def _consumer(broker: BrokerThread, **extra: object) -> ShareConsumer:
    config: dict[str, object] = {"bootstrap.servers": broker.bootstrap, "group.id": GROUP}
    config.update({k.replace("_", "."): v for k, v in extra.items()})
    consumer = ShareConsumer(config)
    consumer.subscribe([TOPIC])
    return consumer


def _poll_until(
    consumer: ShareConsumer, count: int, timeout: float = 20
) -> list[ShareConsumerRecord]:
    got: list[ShareConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, got
        got += consumer.poll(0.2)
    return got


def test_three_members_process_every_record_once(broker: BrokerThread) -> None:
    _topic(broker, 2)
    expected = {f"job-{i}".encode() for i in range(200)}
    for i, value in enumerate(sorted(expected)):
        assert produce(broker.port, TOPIC, i % 2, value)[0] is ErrorCode.none
    consumers = [_consumer(broker, client_id=f"w{i}") for i in range(3)]
    try:
        processed: dict[int, list[bytes]] = {i: [] for i in range(3)}
        deadline = time.monotonic() + 30
        while sum(map(len, processed.values())) < len(expected):
            assert time.monotonic() < deadline, {k: len(v) for k, v in processed.items()}
            for i, consumer in enumerate(consumers):
                for record in consumer.poll(0.05):
                    assert record.delivery_count == 1
                    processed[i].append(record.value or b"")
        values = [v for vs in processed.values() for v in vs]
        assert sorted(values) == sorted(expected)  # each once
        # Accepted at the next poll: nothing comes again.
        for consumer in consumers:
            assert consumer.poll(0.2) == []
        assert {len(c.assignment()) for c in consumers} <= {1, 2}
    finally:
        for consumer in consumers:
            consumer.close()


def test_a_released_record_comes_again_and_a_rejected_one_never(broker: BrokerThread) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
    consumer = _consumer(broker, share_acknowledgement_mode="explicit")
    try:
        first = _poll_until(consumer, 3)
        assert [(r.value, r.delivery_count) for r in first] == [(b"a", 1), (b"b", 1), (b"c", 1)]
        with pytest.raises(RuntimeError, match="All records must be acknowledged"):
            consumer.poll(0)
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.ACCEPT)
        consumer.acknowledge_offset(TOPIC, 0, 2, AcknowledgeType.REJECT)
        results = consumer.commit_sync()
        assert results == {first[0].topic_partition: None}
        again = _poll_until(consumer, 1)
        assert [(r.value, r.offset, r.delivery_count) for r in again] == [(b"a", 0, 2)]
        consumer.acknowledge(again[0], AcknowledgeType.REJECT)
        # Acknowledgements ride on the next fetch; archived records never return.
        assert consumer.poll(0.5) == []
    finally:
        consumer.close()


def test_implicit_mode_refuses_explicit_acknowledgements(broker: BrokerThread) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    consumer = _consumer(broker)
    try:
        (record,) = _poll_until(consumer, 1)
        with pytest.raises(RuntimeError, match="Implicit acknowledgement"):
            consumer.acknowledge(record)
        heard: list[tuple[dict[object, set[int]], object]] = []
        consumer.set_acknowledgement_commit_callback(lambda o, e: heard.append((o, e)))
        assert consumer.commit_sync() == {record.topic_partition: None}
        assert heard == [({record.topic_partition: {0}}, None)]
    finally:
        consumer.close()


def test_records_of_a_member_closed_without_acknowledging_go_to_another(
    broker: BrokerThread,
) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b")
    quitter = _consumer(broker, share_acknowledgement_mode="explicit")
    other: ShareConsumer | None = None
    try:
        assert len(_poll_until(quitter, 2)) == 2
        quitter.close()
        other = _consumer(broker)
        again = _poll_until(other, 2)
        assert [(r.value, r.delivery_count) for r in again] == [(b"a", 2), (b"b", 2)]
    finally:
        quitter.close()
        if other is not None:
            other.close()


def test_records_of_a_stalled_member_come_again_after_the_lock_duration(
    broker: BrokerThread,
) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    stalled = _consumer(broker)
    other = _consumer(broker)
    try:
        (first,) = _poll_until(stalled, 1)
        started = time.monotonic()
        # The stalled member keeps heartbeating but neither polls nor acknowledges.
        (again,) = _poll_until(other, 1)
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
    _topic(broker, 1)
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
        other = _consumer(broker)
        again = _poll_until(other, 2)
        assert [(r.value, r.delivery_count) for r in again] == [(b"a", 2), (b"b", 2)]
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(10)
        if other is not None:
            other.close()


def test_the_asyncio_edition(broker: BrokerThread) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b")

    async def run() -> list[tuple[bytes | None, int]]:
        config = {"bootstrap.servers": broker.bootstrap, "group.id": GROUP}
        async with AsyncShareConsumer(config) as consumer:
            consumer.subscribe([TOPIC])
            got: list[ShareConsumerRecord] = []
            deadline = time.monotonic() + 20
            while len(got) < 2:
                assert time.monotonic() < deadline
                got += await consumer.poll(0.2)
            results = await consumer.commit_async()
            assert results == {got[0].topic_partition: None}
            return [(r.value, r.delivery_count) for r in got]

    assert asyncio.run(run()) == [(b"a", 1), (b"b", 1)]


def test_records_of_a_partition_given_away_are_still_acknowledged(broker: BrokerThread) -> None:
    from kgroups.client.admin import Admin

    _topic(broker, 2)
    produce(broker.port, TOPIC, 0, b"a")
    produce(broker.port, TOPIC, 1, b"b")
    first = _consumer(broker)
    second: ShareConsumer | None = None
    try:
        assert sorted(r.value or b"" for r in _poll_until(first, 2)) == [b"a", b"b"]
        second = _consumer(broker)
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


def test_unsubscribing_leaves_the_group_and_hands_the_records_back(
    broker: BrokerThread,
) -> None:
    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    consumer = _consumer(broker, share_acknowledgement_mode="explicit")
    try:
        (record,) = _poll_until(consumer, 1)
        consumer.unsubscribe()
        assert consumer.assignment() == set() and consumer.subscription() == set()
        with pytest.raises(RuntimeError, match="not subscribed"):
            consumer.poll(0)
        # Subscribed again, it joins anew and gets the unacknowledged record again.
        consumer.subscribe([TOPIC])
        (again,) = _poll_until(consumer, 1)
        assert (again.offset, again.delivery_count) == (record.offset, 2)
        consumer.acknowledge(again)
    finally:
        consumer.close()


def test_a_group_id_of_another_kind_of_group_is_refused(broker: BrokerThread) -> None:
    from kgroups.client.admin import Admin
    from kgroups.errors import KafkaError

    _topic(broker, 1)

    async def commit() -> None:
        admin = Admin(broker.bootstrap)
        try:
            await admin.commit("classic", {(TOPIC, 0): 0})
        finally:
            await admin.close()

    asyncio.run(commit())
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "classic"})
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 10
        with pytest.raises(KafkaError) as refused:
            while time.monotonic() < deadline:
                consumer.poll(0.1)
        assert refused.value.error_code is ErrorCode.group_id_not_found
        assert str(refused.value) == "Group classic is not a share group."
    finally:
        consumer.close()


def test_acknowledgements_go_while_buffered_records_are_handed_out(
    broker: BrokerThread,
) -> None:
    from kgroups.client.admin import Admin

    _topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
    # One fetch acquires the whole batch; polls hand it out one record at a time.
    consumer = _consumer(broker, max_poll_records=1)

    async def start_offset() -> int:
        admin = Admin(broker.bootstrap)
        try:
            (offset,) = await admin.describe_share_group_offsets(GROUP)
        finally:
            await admin.close()
        return offset.start_offset

    try:
        assert [r.value for r in _poll_until(consumer, 1)] == [b"a"]
        assert [r.value for r in consumer.poll(0)] == [b"b"]  # from the buffer; "a" accepted
        deadline = time.monotonic() + 10
        while asyncio.run(start_offset()) != 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        consumer.close()
