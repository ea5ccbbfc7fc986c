"""kgroups' ShareConsumer against a thread broker: members of one share group
split the records, and what they acknowledge decides what is delivered
again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_brokers import produce
from share_consumers import GROUP, TOPIC, poll_until, share_broker, share_consumer, share_topic

from kgroups.client.async_share_consumer import AsyncShareConsumer
from kgroups.client.share_consumer import ShareConsumer
from kgroups.client.share_record import AcknowledgeType, ShareConsumerRecord
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = share_broker(tmp_path)
    try:
        yield b
    finally:
        b.stop()


def test_three_members_process_every_record_once(broker: BrokerThread) -> None:
    share_topic(broker, 2)
    expected = {f"job-{i}".encode() for i in range(200)}
    for i, value in enumerate(sorted(expected)):
        assert produce(broker.port, TOPIC, i % 2, value)[0] is ErrorCode.none
    consumers = [share_consumer(broker, client_id=f"w{i}") for i in range(3)]
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
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a", b"b", b"c")
    consumer = share_consumer(broker, share_acknowledgement_mode="explicit")
    try:
        first = poll_until(consumer, 3)
        assert [(r.value, r.delivery_count) for r in first] == [(b"a", 1), (b"b", 1), (b"c", 1)]
        assert consumer.acquisition_lock_timeout_ms == 30_000
        with pytest.raises(RuntimeError, match="All records must be acknowledged"):
            consumer.poll(0)
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.ACCEPT)
        consumer.acknowledge_offset(TOPIC, 0, 2, AcknowledgeType.REJECT)
        results = consumer.commit_sync()
        assert results == {first[0].topic_partition: None}
        again = poll_until(consumer, 1)
        assert [(r.value, r.offset, r.delivery_count) for r in again] == [(b"a", 0, 2)]
        consumer.acknowledge(again[0], AcknowledgeType.REJECT)
        # Acknowledgements ride on the next fetch; archived records never return.
        assert consumer.poll(0.5) == []
    finally:
        consumer.close()


def test_implicit_mode_refuses_explicit_acknowledgements(broker: BrokerThread) -> None:
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    consumer = share_consumer(broker)
    try:
        (record,) = poll_until(consumer, 1)
        with pytest.raises(RuntimeError, match="Implicit acknowledgement"):
            consumer.acknowledge(record)
        heard: list[tuple[dict[object, set[int]], object]] = []
        consumer.set_acknowledgement_commit_callback(lambda o, e: heard.append((o, e)))
        assert consumer.commit_sync() == {record.topic_partition: None}
        assert heard == [({record.topic_partition: {0}}, None)]
    finally:
        consumer.close()


def test_the_asyncio_edition(broker: BrokerThread) -> None:
    share_topic(broker, 1)
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


def test_unsubscribing_leaves_the_group_and_hands_the_records_back(
    broker: BrokerThread,
) -> None:
    share_topic(broker, 1)
    produce(broker.port, TOPIC, 0, b"a")
    consumer = share_consumer(broker, share_acknowledgement_mode="explicit")
    try:
        (record,) = poll_until(consumer, 1)
        consumer.unsubscribe()
        assert consumer.assignment() == set() and consumer.subscription() == set()
        with pytest.raises(RuntimeError, match="not subscribed"):
            consumer.poll(0)
        # Subscribed again, it joins anew and gets the unacknowledged record again.
        consumer.subscribe([TOPIC])
        (again,) = poll_until(consumer, 1)
        assert (again.offset, again.delivery_count) == (record.offset, 2)
        consumer.acknowledge(again)
    finally:
        consumer.close()


def test_a_group_id_of_another_kind_of_group_is_refused(broker: BrokerThread) -> None:
    from kgroups.client.admin import Admin
    from kgroups.errors import KafkaError

    share_topic(broker, 1)

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
        # This poll accepts both records, the one of the partition given away too:
        # each share partition's start offset moves past its record.
        assert first.poll(0.1) == []

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
