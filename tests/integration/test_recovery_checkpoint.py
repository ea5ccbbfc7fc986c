"""The broker checkpoints recovery points: periodically after flushes (and a
rolled segment is flushed in the background, as Kafka does, so the recovery
point advances under the default flush policy too) and at shutdown."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kgroups.storage.log_manager import RECOVERY_POINT_FILE

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _points(data: Path) -> dict[str, int]:
    try:
        lines = (data / RECOVERY_POINT_FILE).read_text().splitlines()[2:]
    except FileNotFoundError:
        return {}
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines)}


def _produce(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, b"%d" % i + b"x" * size, partition=0)
        if i % 10 == 9:
            producer.flush(10)
    assert producer.flush(10) == 0


def _create(bootstrap: str, topic: str, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(20)


def _wait_for(condition: object, timeout: float = 20) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_recovery_points_are_checkpointed_after_flushes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerThread(
        data, log_flush_interval_messages=1, log_flush_offset_checkpoint_interval_ms=50
    ).start()
    try:
        _create(broker.bootstrap, "t")
        _produce(broker.bootstrap, "t", 30)
        _wait_for(lambda: _points(data).get("t-0") == 30)
    finally:
        broker.stop()
    assert _points(data)["t-0"] == 30


def test_a_rolled_segment_is_flushed_under_the_default_policy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerThread(data, log_flush_offset_checkpoint_interval_ms=50).start()
    try:
        _create(broker.bootstrap, "t", **{"segment.bytes": "2000"})
        _produce(broker.bootstrap, "t", 100)
        _wait_for(lambda: _points(data).get("t-0", 0) >= 80)
    finally:
        broker.stop()
