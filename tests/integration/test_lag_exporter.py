"""``kgroups lag-exporter`` against a kgroups broker: the same lag as the
broker's own endpoint, learnt over the Kafka protocol only, and Burrow's status."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.clock import ManualClock
from kgroups.metrics.lag_exporter import LagExporter

from broker_thread import BrokerThread
from lag_fixtures import HOUR_MS, commit, create_topic, produce_every_second
from prometheus_text import Scrape, scrape


@pytest.fixture
def metrics_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", metrics_port=0).start()
    try:
        yield b
    finally:
        b.stop()


# The labels kafka-lag-exporter adds to the broker's: the cluster everywhere,
# the owner of the partition (none here) on the per-partition families.
CLUSTER = {"cluster_name": "default"}
NO_OWNER = {"member_host": "unknown", "consumer_id": "unknown", "client_id": "unknown"}


def _lag_samples(m: Scrape) -> dict[Any, float]:
    """The lag samples, without the exporter's extra labels."""
    extra = {*CLUSTER, *NO_OWNER}
    return {
        (name, frozenset(kv for kv in labels if kv[0] not in extra)): value
        for (name, labels), value in m.samples.items()
        if name.startswith("kafka_consumergroup_group_")
    }


def _status(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as response:
        body: dict[str, Any] = json.loads(response.read())
    return {g["group"]: g for g in body["groups"]}


def test_exporter_reports_the_lag_the_broker_reports(metrics_broker: BrokerThread) -> None:
    b = metrics_broker
    assert b.broker is not None and b.broker.metrics is not None
    clock = ManualClock(int(time.time() * 1000))
    create_topic(b, "orders", 3)
    first_ms = clock.now_ms() - HOUR_MS
    produce_every_second(b.bootstrap, "orders", 10, first_ms)
    commit(b.bootstrap, "billing", "orders", {0: 4, 1: 10, 2: 0})
    exporter = LagExporter(b.bootstrap, interval_s=0.05, window=10, clock=clock)
    port = b.run(exporter.start("127.0.0.1", 0))
    try:

        def settled() -> None:
            # The second poll to finish started after anything done before.
            b.run(exporter.polled())
            b.run(exporter.polled())

        settled()
        m = scrape(port)
        labels = {"group": "billing", "topic": "orders", **CLUSTER, **NO_OWNER}
        assert m.value("kafka_consumergroup_group_offset", partition=0, **labels) == 4
        assert m.value("kafka_consumergroup_group_lag", partition=0, **labels) == 6
        assert m.value("kafka_consumergroup_group_lag", partition=2, **labels) == 10
        assert m.value("kafka_consumergroup_group_lag_seconds", partition=0, **labels) == 3596
        assert m.value("kafka_consumergroup_group_lag_seconds", partition=1, **labels) == 0
        assert (
            m.value("kafka_consumergroup_group_max_lag_seconds", group="billing", **CLUSTER) == 3600
        )
        at = {"topic": "orders", "partition": 1, **CLUSTER}
        assert m.value("kafka_partition_latest_offset", **at) == 10
        assert m.value("kafka_partition_earliest_offset", **at) == 0

        # Offsets and lags are the broker's own, seconds within the clocks' skew.
        broker_side = _lag_samples(scrape(b.broker.metrics.port))
        ours = _lag_samples(m)
        assert broker_side.keys() == ours.keys()
        for key, value in ours.items():
            assert broker_side[key] == pytest.approx(value, abs=60), key

        # Burrow: a lagging partition never seen moving is STALL; one whose
        # committed offset moved, then stopped for longer than its window
        # spans, is STOP; either makes its group ERR.
        status = _status(port)["billing"]
        assert status["status"] == "ERR"
        assert [(p["partition"], p["status"]) for p in status["partitions"]] == [
            (0, "STALL"),
            (2, "STALL"),
        ]
        commit(b.bootstrap, "billing", "orders", {0: 10, 2: 1})
        settled()
        clock.advance(10_000)
        commit(b.bootstrap, "billing", "orders", {2: 2})
        settled()
        status = _status(port)["billing"]
        assert status["status"] == "OK"
        assert status["totallag"] == 0 + 0 + 8
        clock.advance(60_000)
        status = _status(port)["billing"]
        assert status["status"] == "ERR"
        assert [(p["partition"], p["status"]) for p in status["partitions"]] == [(2, "STOP")]
        assert status["partitions"][0]["start"]["offset"] == 0
        assert status["partitions"][0]["end"]["offset"] == 2
    finally:
        b.run(exporter.close())


def test_a_caught_up_consumer_that_stops_is_reported_stopped(
    metrics_broker: BrokerThread,
) -> None:
    b = metrics_broker
    clock = ManualClock(int(time.time() * 1000))
    create_topic(b, "orders", 3)
    produce_every_second(b.bootstrap, "orders", 5, clock.now_ms())
    commit(b.bootstrap, "billing", "orders", {0: 5, 1: 5, 2: 5})
    window = 3
    exporter = LagExporter(b.bootstrap, interval_s=0.05, window=window, clock=clock)
    port = b.run(exporter.start("127.0.0.1", 0))
    try:
        b.run(exporter.polled())
        b.run(exporter.polled())
        assert _status(port)["billing"]["status"] == "OK"

        # Producers go on, the consumer commits nothing more.
        produce_every_second(b.bootstrap, "orders", 5, clock.now_ms())
        b.run(exporter.polled())
        b.run(exporter.polled())
        clock.advance(60_000)
        # Caught up at one of the last log ends seen: not called stopped yet.
        if _status(port)["billing"]["status"] == "OK":
            for _ in range(window):
                b.run(exporter.polled())
        status = _status(port)["billing"]
        assert status["status"] == "ERR"
        assert [(p["partition"], p["status"]) for p in status["partitions"]] == [
            (0, "STOP"),
            (1, "STOP"),
            (2, "STOP"),
        ]
        assert status["totallag"] == 15
    finally:
        b.run(exporter.close())


def test_a_consumer_caught_up_at_a_recent_log_end_is_not_stopped_yet(
    metrics_broker: BrokerThread,
) -> None:
    b = metrics_broker
    clock = ManualClock(int(time.time() * 1000))
    create_topic(b, "orders", 3)
    produce_every_second(b.bootstrap, "orders", 5, clock.now_ms())
    commit(b.bootstrap, "billing", "orders", {0: 5, 1: 5, 2: 5})
    # A window far longer than the test: the log end of 5 stays among the recent ones.
    exporter = LagExporter(b.bootstrap, interval_s=0.05, window=1000, clock=clock)
    port = b.run(exporter.start("127.0.0.1", 0))
    try:
        b.run(exporter.polled())
        b.run(exporter.polled())
        produce_every_second(b.bootstrap, "orders", 5, clock.now_ms())
        b.run(exporter.polled())
        b.run(exporter.polled())
        clock.advance(60_000)
        status = _status(port)["billing"]
        assert status["totallag"] == 15
        assert status["status"] == "OK"
    finally:
        b.run(exporter.close())


def test_lag_exporter_command_serves_metrics(metrics_broker: BrokerThread) -> None:
    b = metrics_broker
    create_topic(b, "orders", 3)
    commit(b.bootstrap, "billing", "orders", {0: 0})
    command = [sys.executable, "-m", "kgroups", "lag-exporter"]
    args = ["--bootstrap-server", b.bootstrap, "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(
        [*command, *args, "--poll-interval", "0.1", "--cluster-name", "prod"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving lag metrics on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 30
        while True:
            m = scrape(port)
            labels = {"group": "billing", "topic": "orders", "partition": 0, **NO_OWNER}
            labels["cluster_name"] = "prod"
            if m.get("kafka_consumergroup_group_offset", -1, **labels) == 0:
                break
            assert time.monotonic() < deadline, m.text
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)
