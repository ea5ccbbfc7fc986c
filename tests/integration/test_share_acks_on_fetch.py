"""Where kgroups' share consumer sends its acknowledgements, seen at the
broker: with the next ShareFetch while it hands out records it already
holds (no ShareAcknowledge), in a ShareAcknowledge before their lock would
run out, and at once on commit_sync and close."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from cluster_brokers import produce
from share_consumers import GROUP, TOPIC, poll_until, share_broker, share_consumer, share_topic

from kgroups.client.admin import Admin
from kgroups.protocol import apis

from broker_thread import BrokerThread


def share_acknowledges(broker: BrokerThread) -> int:
    assert broker.broker is not None
    count: int = broker.broker.stats.requests[apis.SHARE_ACKNOWLEDGE]
    return count


def start_offset(broker: BrokerThread) -> int:
    async def describe() -> int:
        admin = Admin(broker.bootstrap)
        try:
            (offset,) = await admin.describe_share_group_offsets(GROUP)
        finally:
            await admin.close()
        return offset.start_offset

    return asyncio.run(describe())


def wait_for_start_offset(broker: BrokerThread, offset: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while start_offset(broker) != offset:
        assert time.monotonic() < deadline, start_offset(broker)
        time.sleep(0.05)


def test_acknowledgements_of_buffered_records_ride_on_the_next_fetch(tmp_path: Path) -> None:
    broker = share_broker(tmp_path)
    try:
        share_topic(broker, 1)
        produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
        # One fetch acquires the whole batch; polls hand it out a record at a time.
        consumer = share_consumer(broker, max_poll_records=1)
        try:
            got = [r.value for r in poll_until(consumer, 1)]
            got += [r.value for r in consumer.poll(0)]
            got += [r.value for r in consumer.poll(0)]
            assert got == [b"a", b"b", b"c"]
            assert start_offset(broker) == 0  # "a" and "b" wait for the next fetch
            assert consumer.poll(0.2) == []  # that fetch accepts all three
            assert start_offset(broker) == 3
            assert share_acknowledges(broker) == 0
        finally:
            consumer.close()
    finally:
        broker.stop()


def test_commit_sync_sends_acknowledgements_at_once(tmp_path: Path) -> None:
    broker = share_broker(tmp_path)
    try:
        share_topic(broker, 1)
        produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
        consumer = share_consumer(broker, max_poll_records=1)
        try:
            assert [r.value for r in poll_until(consumer, 1)] == [b"a"]
            results = consumer.commit_sync()
            assert list(results.values()) == [None]
            assert share_acknowledges(broker) == 1
            assert start_offset(broker) == 1  # "b" and "c" are still held
        finally:
            consumer.close()
    finally:
        broker.stop()


def test_close_acknowledges_what_waited_for_a_fetch(tmp_path: Path) -> None:
    broker = share_broker(tmp_path)
    try:
        share_topic(broker, 1)
        produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
        first = share_consumer(broker, max_poll_records=1)
        try:
            assert [r.value for r in poll_until(first, 1)] == [b"a"]
            assert [r.value for r in first.poll(0)] == [b"b"]
        finally:
            first.close()  # accepts "a" and "b", releases "c"
        assert start_offset(broker) == 2
        second = share_consumer(broker)
        try:
            (again,) = poll_until(second, 1)
            assert (again.value, again.delivery_count) == (b"c", 2)
        finally:
            second.close()
    finally:
        broker.stop()


def test_acknowledgements_go_before_the_lock_of_their_records_ends(tmp_path: Path) -> None:
    broker = share_broker(tmp_path, lock_ms=4000)
    try:
        share_topic(broker, 1)
        produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
        consumer = share_consumer(broker, max_poll_records=1)
        try:
            assert consumer.acquisition_lock_timeout_ms is None
            assert [r.value for r in poll_until(consumer, 1)] == [b"a"]
            assert consumer.acquisition_lock_timeout_ms == 4000
            assert [r.value for r in consumer.poll(0)] == [b"b"]
            assert share_acknowledges(broker) == 0
            # The application polls no more: with half the lock gone, "a" goes in
            # a ShareAcknowledge, taken while its lock holds.
            wait_for_start_offset(broker, 1)
            assert share_acknowledges(broker) == 1
        finally:
            consumer.close()
    finally:
        broker.stop()
