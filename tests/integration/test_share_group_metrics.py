"""The broker's Prometheus endpoint after kgroups' ShareConsumer consumed and
acknowledged records: the share group's members and state, and its share
partition's offsets, lag, acquired records, lock timeouts and archived
records, as a user reads them. The broker's clock is a ManualClock, so a
record lock runs out when the test says."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_brokers import produce
from share_consumers import GROUP, TOPIC, poll_until, share_consumer, share_topic

from kgroups.client import AcknowledgeType
from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread
from prometheus_text import Scrape, scrape

LOCK_MS = 30_000
SHARE_PARTITION = {"group": GROUP, "topic": TOPIC, "partition": 0}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def broker(tmp_path: Path, clock: ManualClock) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path / "data",
        clock,
        metrics_port=0,
        group_share_heartbeat_interval_ms=200,
        group_share_min_heartbeat_interval_ms=100,
    ).start()
    try:
        yield b
    finally:
        b.stop()


def _scrape(b: BrokerThread) -> Scrape:
    assert b.broker is not None and b.broker.metrics is not None
    return scrape(b.broker.metrics.port)


def _partition(m: Scrape, name: str, **labels: str | int) -> float:
    return m.value(name, **SHARE_PARTITION, **labels)


def test_a_share_consumers_work_read_from_the_metrics(
    broker: BrokerThread, clock: ManualClock
) -> None:
    share_topic(broker, 1)
    assert produce(broker.port, TOPIC, 0, *[b"job-%d" % i for i in range(6)])[0] is ErrorCode.none
    consumer = share_consumer(broker, share_acknowledgement_mode="explicit")
    try:
        records = poll_until(consumer, 6)
        kinds = [AcknowledgeType.ACCEPT] * 3 + [AcknowledgeType.REJECT, AcknowledgeType.RELEASE]
        for record, kind in zip(records, kinds, strict=False):
            consumer.acknowledge(record, kind)
        # Offset 5 stays with the consumer, unacknowledged.
        assert all(error is None for error in consumer.commit_sync(10).values())

        m = _scrape(broker)
        assert m.value("kafka_sharegroup_members", group=GROUP) == 1
        assert m.value("kafka_sharegroup_state", group=GROUP, state="Stable") == 1
        assert (
            m.value("kafka_server_group_coordinator_metrics_share_group_count", state="Stable") == 1
        )
        assert _partition(m, "kafka_sharegroup_partition_start_offset") == 4
        assert _partition(m, "kafka_sharegroup_partition_end_offset") == 6
        assert _partition(m, "kafka_server_sharepartitionmetrics_inflightmessagecount") == 2
        # 4 (released, to be delivered again) and 5 (still being processed).
        assert _partition(m, "kafka_sharegroup_partition_lag") == 2
        assert _partition(m, "kafka_sharegroup_partition_acquired_records") == 1
        by_delivery = "kafka_sharegroup_partition_acquired_records_by_delivery_count"
        assert [_partition(m, by_delivery, delivery_count=n) for n in range(1, 6)] == [
            1,
            0,
            0,
            0,
            0,
        ]
        archived = "kafka_sharegroup_partition_archived_records_total"
        assert _partition(m, archived, reason="rejected") == 1
        assert _partition(m, archived, reason="delivery_count_limit") == 0
        lock_timeouts = "kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total"
        assert _partition(m, lock_timeouts) == 0
        acks = "kafka_server_sharegroupmetrics_recordacknowledgements_total"
        assert [m.value(acks, ack_type=t) for t in ("Accept", "Reject", "Release")] == [3, 1, 1]

        # The consumer sits on offset 5 past its lock: the scrape sees it run out.
        clock.advance(LOCK_MS)
        m = _scrape(broker)
        assert _partition(m, lock_timeouts) == 1
        assert _partition(m, "kafka_sharegroup_partition_acquired_records") == 0
        assert _partition(m, "kafka_sharegroup_partition_lag") == 2

        # Another member gets them again (their second delivery) and accepts them.
        other = share_consumer(broker, share_acknowledgement_mode="explicit")
        try:
            again = poll_until(other, 2)
            assert [(r.offset, r.delivery_count) for r in again] == [(4, 2), (5, 2)]
            m = _scrape(broker)
            assert m.value("kafka_sharegroup_members", group=GROUP) == 2
            assert _partition(m, by_delivery, delivery_count=2) == 2
            for record in again:
                other.acknowledge(record, AcknowledgeType.ACCEPT)
            other.commit_sync(10)
            m = _scrape(broker)
            assert _partition(m, "kafka_sharegroup_partition_lag") == 0
            assert _partition(m, "kafka_sharegroup_partition_start_offset") == 6
            assert _partition(m, "kafka_sharegroup_partition_acquired_records") == 0
        finally:
            other.close()
    finally:
        consumer.close()

    deadline = time.monotonic() + 20
    while _scrape(broker).get("kafka_sharegroup_state", group=GROUP, state="Empty") != 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    m = _scrape(broker)
    assert m.value("kafka_sharegroup_members", group=GROUP) == 0
    assert m.value("kafka_server_group_coordinator_metrics_share_group_count", state="Empty") == 1


def test_a_share_partition_is_scraped_after_a_restart_before_any_fetch(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings: dict[str, object] = {
        "metrics_port": 0,
        "group_share_heartbeat_interval_ms": 200,
        "group_share_min_heartbeat_interval_ms": 100,
    }
    broker = BrokerThread(data, **settings).start()
    try:
        share_topic(broker, 1)
        assert produce(broker.port, TOPIC, 0, *[b"job-%d" % i for i in range(5)])[0] is (
            ErrorCode.none
        )
        consumer = share_consumer(broker, share_acknowledgement_mode="explicit")
        try:
            records = poll_until(consumer, 5)
            kinds = [AcknowledgeType.ACCEPT] * 2 + [AcknowledgeType.REJECT]
            kinds += [AcknowledgeType.RELEASE] * 2
            for record, kind in zip(records, kinds, strict=True):
                consumer.acknowledge(record, kind)
            consumer.commit_sync(10)
        finally:
            consumer.close()
    finally:
        broker.stop()
    broker = BrokerThread(data, **settings).start()
    try:
        m = _scrape(broker)
        assert m.value("kafka_sharegroup_members", group=GROUP) == 0
        assert m.value("kafka_sharegroup_state", group=GROUP, state="Empty") == 1
        # What was stored: 0..2 done, 3 and 4 to be delivered again.
        assert _partition(m, "kafka_sharegroup_partition_start_offset") == 3
        assert _partition(m, "kafka_sharegroup_partition_end_offset") == 5
        assert _partition(m, "kafka_sharegroup_partition_lag") == 2
        assert _partition(m, "kafka_sharegroup_partition_acquired_records") == 0
        # Later scrapes read the same share partition, not rebuilt from its state.
        assert broker.broker is not None
        views = broker.broker.share_partitions.stored_views
        for _ in range(3):
            assert _partition(_scrape(broker), "kafka_sharegroup_partition_lag") == 2
        assert views.rebuilds == 1
    finally:
        broker.stop()
