"""The consumer's API beyond polling: positions, seeking, pausing, committing --
blocking and asyncio editions."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from kgroups.client import (
    AsyncConsumer,
    AsyncProducer,
    Consumer,
    ConsumerRecord,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    RebalanceListener,
    TopicPartition,
)

from broker_thread import BrokerThread
from interop.group_members import wait_until
from interop.test_client_support import create_topic, produce

pytestmark = pytest.mark.interop

T0, T1 = TopicPartition("api", 0), TopicPartition("api", 1)


def _poll_until(consumer: Consumer, count: int, timeout: float = 10) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while len(records) < count and not deadline.is_set():
            records += consumer.poll(0.2)
    finally:
        timer.cancel()
    return records


@pytest.fixture
def topic(broker: BrokerThread) -> str:
    create_topic(broker.bootstrap, "api", 2)
    produce(broker.bootstrap, "api", [f"v{i}".encode() for i in range(100)])
    return "api"


def test_assigned_partitions_seek_pause_and_positions(broker: BrokerThread, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([T0, T1])
        assert consumer.assignment() == {T0, T1}
        ends = consumer.end_offsets([T0, T1])
        assert sum(ends.values()) == 100
        assert consumer.beginning_offsets([T0, T1]) == {T0: 0, T1: 0}
        assert consumer.position(T0) == 0

        consumer.pause([T1])
        records = _poll_until(consumer, ends[T0])
        assert {r.partition for r in records} == {0}
        assert consumer.position(T0) == ends[T0]
        assert consumer.paused() == {T1}

        consumer.resume([T1])
        records = _poll_until(consumer, ends[T1])
        assert {r.partition for r in records} == {1}

        consumer.seek(T0, 3)
        again = _poll_until(consumer, ends[T0] - 3)
        assert [r.offset for r in again] == list(range(3, ends[T0]))

        consumer.seek_to_beginning([T1])
        assert consumer.position(T1) == 0
        consumer.seek_to_end()
        assert consumer.position(T0) == ends[T0]
        assert consumer.poll(0.3) == []
    finally:
        consumer.close()


def test_no_reset_strategy_means_no_guessing(broker: BrokerThread, topic: str) -> None:
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "none", "auto.offset.reset": "none"}
    )
    try:
        consumer.assign([T0])
        with pytest.raises(NoOffsetForPartitionError):
            consumer.poll(2)
    finally:
        consumer.close()


def test_commits_sync_and_async_and_reading_them_back(broker: BrokerThread, topic: str) -> None:
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "committer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer(config)
    heard: list[tuple[dict[TopicPartition, OffsetAndMetadata], Exception | None, str]] = []
    try:
        consumer.subscribe([topic])
        records = _poll_until(consumer, 100)
        assert len(records) == 100
        consumer.commit({T0: OffsetAndMetadata(5, "five")})
        assert consumer.committed([T0, T1]) == {T0: OffsetAndMetadata(5, "five"), T1: None}

        future = consumer.commit_async(
            callback=lambda offsets, error: heard.append(
                (offsets, error, threading.current_thread().name)
            )
        )
        future.result(10)
        consumer.poll(0.1)  # callbacks run inside calls, in this thread
        assert len(heard) == 1
        offsets, error, thread = heard[0]
        assert error is None and thread == threading.current_thread().name
        assert sum(o.offset for o in offsets.values()) == 100
    finally:
        consumer.close()
    # A new member of the group starts from the commit.
    again = Consumer(config)
    try:
        again.subscribe([topic])
        assert _poll_until(again, 1, timeout=2) == []
    finally:
        again.close()


def test_a_hook_may_commit_from_inside_the_rebalance(broker: BrokerThread, topic: str) -> None:
    """The classic pattern: commit in on_partitions_revoked."""
    config = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "hooks",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "heartbeat.interval.ms": 200,
    }
    first = Consumer(config)
    committed_in_hook: list[int] = []

    class CommitOnRevoke(RebalanceListener):
        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            first.commit()
            committed_in_hook.append(len(partitions))

    got: list[ConsumerRecord] = []
    stop = threading.Event()

    def run_second() -> None:
        second = Consumer(config)
        try:
            second.subscribe([topic])
            while not stop.is_set():
                got.extend(second.poll(0.1))
        finally:
            second.close()

    thread = threading.Thread(target=run_second)
    try:
        first.subscribe([topic], listener=CommitOnRevoke())
        assert len(_poll_until(first, 100)) == 100
        thread.start()
        # The hook runs in this thread, inside first's poll.
        wait_until(lambda: bool(first.poll(0.05)) or len(first.assignment()) == 1, 20, "rebalance")
        consumer_settled = _poll_until(first, 1, timeout=1)
        assert consumer_settled == []
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(10)
        first.close()
    assert committed_in_hook and committed_in_hook[0] == 2
    assert got == [], "the new owner did not start from the hook's commit"


def test_the_asyncio_edition(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "aio", 3)

    async def scenario() -> None:
        async with AsyncProducer({"bootstrap.servers": broker.bootstrap}) as producer:
            deliveries = [await producer.send("aio", f"a{i}".encode()) for i in range(30)]
            await producer.flush()
            metadata = [await d for d in deliveries]
            assert {m.topic for m in metadata} == {"aio"}
            assert (await producer.send_and_wait("aio", b"last", key=b"k")).offset >= 0

        consumer = AsyncConsumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "aio",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(re.compile("ai.*"))
        seen = []
        async for record in consumer:
            seen.append(record.value)
            if len(seen) == 31:
                break
        assert sorted(seen) == sorted([f"a{i}".encode() for i in range(30)] + [b"last"])
        await consumer.commit()
        assignment = consumer.assignment()
        assert {tp.topic for tp in assignment} == {"aio"}
        committed = await consumer.committed(assignment)
        assert sum(o.offset for o in committed.values() if o is not None) == 31
        await consumer.close()

    asyncio.run(scenario())
