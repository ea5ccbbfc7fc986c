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


def _lag_samples(m: Scrape) -> dict[Any, float]:
    return {
        key: value
        for key, value in m.samples.items()
        if key[0].startswith("kafka_consumergroup_group_")
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
        labels = {"group": "billing", "topic": "orders"}
        assert m.value("kafka_consumergroup_group_offset", partition=0, **labels) == 4
        assert m.value("kafka_consumergroup_group_lag", partition=0, **labels) == 6
        assert m.value("kafka_consumergroup_group_lag", partition=2, **labels) == 10
        assert m.value("kafka_consumergroup_group_lag_seconds", partition=0, **labels) == 3596
        assert m.value("kafka_consumergroup_group_lag_seconds", partition=1, **labels) == 0
        assert m.value("kafka_consumergroup_group_max_lag_seconds", group="billing") == 3600
        assert m.value("kafka_partition_latest_offset", topic="orders", partition=1) == 10
        assert m.value("kafka_partition_earliest_offset", topic="orders", partition=1) == 0

        # Offsets and lags are the broker's own, seconds within the clocks' skew.
        broker_side = _lag_samples(scrape(b.broker.metrics.port))
        ours = _lag_samples(m)
        assert broker_side.keys() == ours.keys()
        for key, value in ours.items():
            assert broker_side[key] == pytest.approx(value, abs=60), key

        # Burrow: a partition whose committed offset moved, then stopped for
        # longer than its window spans, is STOP, and its group ERR.
        assert _status(port)["billing"]["status"] == "OK"
        commit(b.bootstrap, "billing", "orders", {2: 1})
        settled()
        clock.advance(10_000)
        commit(b.bootstrap, "billing", "orders", {2: 2})
        settled()
        status = _status(port)["billing"]
        assert status["status"] == "OK"
        assert status["totallag"] == 6 + 0 + 8
        clock.advance(60_000)
        status = _status(port)["billing"]
        assert status["status"] == "ERR"
        assert [(p["partition"], p["status"]) for p in status["partitions"]] == [(2, "STOP")]
        assert status["partitions"][0]["start"]["offset"] == 0
        assert status["partitions"][0]["end"]["offset"] == 2
    finally:
        b.run(exporter.close())


def test_lag_exporter_command_serves_metrics(metrics_broker: BrokerThread) -> None:
    b = metrics_broker
    create_topic(b, "orders", 3)
    commit(b.bootstrap, "billing", "orders", {0: 0})
    command = [sys.executable, "-m", "kgroups", "lag-exporter"]
    args = ["--bootstrap-server", b.bootstrap, "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(
        [*command, *args, "--poll-interval", "0.1"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving lag metrics on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        deadline = time.monotonic() + 30
        while True:
            m = scrape(port)
            labels = {"group": "billing", "topic": "orders", "partition": 0}
            if m.get("kafka_consumergroup_group_offset", -1, **labels) == 0:
                break
            assert time.monotonic() < deadline, m.text
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)
