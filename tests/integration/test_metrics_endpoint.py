"""The broker's Prometheus endpoint, scraped while real clients produce,
commit and rebalance, checked against what the broker did."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.clock import ManualClock

from broker_thread import BrokerThread
from interop.group_members import confluent_member
from lag_fixtures import HOUR_MS, commit, create_topic, produce_every_second
from prometheus_text import Scrape, scrape


def _metrics_port(b: BrokerThread) -> int:
    assert b.broker is not None and b.broker.metrics is not None
    return b.broker.metrics.port


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def virtual_broker(tmp_path: Path, clock: ManualClock) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", clock, metrics_port=0).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def metrics_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", metrics_port=0).start()
    try:
        yield b
    finally:
        b.stop()


def test_lag_in_offsets_and_seconds_against_what_was_committed(
    virtual_broker: BrokerThread, clock: ManualClock
) -> None:
    b = virtual_broker
    create_topic(b, "orders", 3)
    first_ms = clock.now_ms() - HOUR_MS
    produce_every_second(b.bootstrap, "orders", 10, first_ms)
    commit(b.bootstrap, "billing", "orders", {0: 4, 1: 10, 2: 0})

    m = scrape(_metrics_port(b))

    assert m.value("kafka_server_brokertopicmetrics_messagesin_total", topic="orders") == 30
    assert m.value("kafka_server_brokertopicmetrics_bytesin_total", topic="orders") > 300
    for p in range(3):
        assert m.value("kafka_log_log_logendoffset", topic="orders", partition=p) == 10
        assert m.value("kafka_log_log_logstartoffset", topic="orders", partition=p) == 0
        assert m.value("kafka_log_log_size", topic="orders", partition=p) > 0
    labels = {"group": "billing", "topic": "orders"}
    assert m.value("kafka_consumergroup_group_offset", partition=0, **labels) == 4
    assert m.value("kafka_consumergroup_group_lag", partition=0, **labels) == 6
    assert m.value("kafka_consumergroup_group_lag", partition=1, **labels) == 0
    assert m.value("kafka_consumergroup_group_lag", partition=2, **labels) == 10
    # The first unconsumed record of partition 0 is its fifth, stamped 4 s after the first.
    now = clock.now_ms()
    assert m.value("kafka_consumergroup_group_lag_seconds", partition=0, **labels) == (
        (now - first_ms - 4000) / 1000
    )
    assert m.value("kafka_consumergroup_group_lag_seconds", partition=1, **labels) == 0
    assert m.value("kafka_consumergroup_group_lag_seconds", partition=2, **labels) == (
        (now - first_ms) / 1000
    )
    assert m.value("kafka_consumergroup_group_max_lag", group="billing") == 10
    assert m.value("kafka_consumergroup_group_max_lag_seconds", group="billing") == 3600
    assert m.value("kafka_consumergroup_group_sum_lag", group="billing") == 16
    assert m.value("kafka_consumergroup_group_topic_sum_lag", **labels) == 16
    assert m.value("kafka_coordinator_group_groupmetadatamanager_numgroupsempty") == 1
    assert m.value("kafka_coordinator_group_groupmetadatamanager_numoffsets") == 3
    assert m.value("kafka_server_group_coordinator_metrics_offset_commit_total") == 3
    assert m.value("kafka_network_requestmetrics_requests_total", request="Produce") >= 1
    assert m.value("kafka_network_requestmetrics_requests_total", request="OffsetCommit") == 1
    assert m.value("kafka_network_requestmetrics_totaltimems_count", request="OffsetCommit") == 1

    # Time passes, nobody consumes: the lag in seconds grows with it.
    clock.advance(60_000)
    later = scrape(_metrics_port(b))
    assert later.value("kafka_consumergroup_group_max_lag_seconds", group="billing") == 3660
    # Consuming it all brings both lags to zero.
    commit(b.bootstrap, "billing", "orders", {0: 10, 2: 10})
    done = scrape(_metrics_port(b))
    assert done.value("kafka_consumergroup_group_sum_lag", group="billing") == 0
    assert done.value("kafka_consumergroup_group_max_lag_seconds", group="billing") == 0


def _scrape_until(port: int, condition: Callable[[Scrape], bool], timeout: float = 30) -> Scrape:
    deadline = time.monotonic() + timeout
    while True:
        m = scrape(port)
        if condition(m) or time.monotonic() > deadline:
            return m
        time.sleep(0.02)


def _group_state(m: Scrape, group: str) -> str | None:
    states = [
        dict(labels)["state"]
        for (name, labels), value in m.samples.items()
        if name == "kafka_consumergroup_state" and dict(labels)["group"] == group and value == 1
    ]
    return states[0] if states else None


def _described_state(bootstrap: str, group: str) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    described: Any = admin.describe_consumer_groups([group])[group].result(20)
    return str(described.state.name)


def test_groups_by_state_members_and_rebalances_during_a_rebalance(
    metrics_broker: BrokerThread,
) -> None:
    from confluent_kafka import Consumer

    b = metrics_broker
    create_topic(b, "events", 3)
    port = _metrics_port(b)
    assigned: list[int] = []
    first = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": "readers",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            "max.poll.interval.ms": 60000,
        }
    )
    first.subscribe(
        ["events"],
        on_assign=lambda _c, ps: assigned.extend(p.partition for p in ps),
        on_revoke=lambda _c, _ps: assigned.clear(),
    )
    second = None
    try:
        deadline = time.monotonic() + 30
        while not assigned and time.monotonic() < deadline:
            first.poll(0.1)
        assert sorted(assigned) == [0, 1, 2]
        stable = scrape(port)
        assert _group_state(stable, "readers") == "Stable"
        assert stable.value("kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 1
        assert stable.value("kafka_consumergroup_members", group="readers") == 1
        generation = stable.value("kafka_consumergroup_generation", group="readers")
        rebalances = stable.value(
            "kafka_server_group_coordinator_metrics_group_completed_rebalance_total"
        )

        # A second member joins while the first does not poll: librdkafka waits
        # for the application to take the revocation, so the group stays in
        # PreparingRebalance until the first member polls again.
        second = confluent_member(b.bootstrap, "readers", "events", "second", "range")
        during = _scrape_until(port, lambda m: _group_state(m, "readers") == "PreparingRebalance")
        assert (
            during.value("kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance")
            == 1
        )
        assert during.value("kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 0
        assert during.value("kafka_consumergroup_members", group="readers") == 2
        assert _described_state(b.bootstrap, "readers") == "PREPARING_REBALANCING"

        deadline = time.monotonic() + 30
        after = stable
        while time.monotonic() < deadline:
            first.poll(0.1)
            after = scrape(port)
            if _group_state(after, "readers") == "Stable":
                break
        assert _group_state(after, "readers") == "Stable"
        assert after.value("kafka_consumergroup_generation", group="readers") == generation + 1
        assert (
            after.value("kafka_server_group_coordinator_metrics_group_completed_rebalance_total")
            == rebalances + 1
        )
        assert after.value("kafka_network_requestmetrics_requests_total", request="JoinGroup") >= 3
        assert after.value("kafka_network_requestmetrics_requests_total", request="Heartbeat") >= 1
        assert after.value("kafka_server_socketservermetrics_connection_count") >= 2
    finally:
        if second is not None:
            second.close()
        first.close()
