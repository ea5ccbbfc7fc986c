"""DeleteRecords on a broker alone, v0-v2, with Kafka's answers
(DeleteRecordsRequestTest, Partition.deleteRecordsOnLeader), and the log
start it moves: read by ListOffsets and Fetch, kept across a restart and a
kill -9, and followed by retention, which deletes the segments before it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_brokers import EARLIEST, fetch, list_offset, produce, wait_for
from partition_admin_wire import delete_records
from topic_admin_wire import create

from kgroups.errors import ErrorCode

from broker_thread import BrokerThread
from process_broker import BrokerProcess

NONE = ErrorCode.none
OUT_OF_RANGE = ErrorCode.offset_out_of_range


def _produce_each(port: int, topic: str, count: int, partition: int = 0) -> None:
    """``count`` records, one batch each, valued b"0", b"1", ..."""
    for i in range(count):
        assert produce(port, topic, partition, str(i).encode())[0] == NONE


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_version_moves_the_log_start(broker: BrokerThread, version: int) -> None:
    assert create(broker.port, "topic-1", 1).error_code == NONE
    _produce_each(broker.port, "topic-1", 10)
    answer = delete_records(broker.port, {("topic-1", 0): 2}, version=version)
    assert answer == {("topic-1", 0): (NONE, 2)}
    assert list_offset(broker.port, "topic-1", 0, EARLIEST) == (NONE, 2)
    assert fetch(broker.port, "topic-1", 0, 1) == (OUT_OF_RANGE, [])
    assert fetch(broker.port, "topic-1", 0, 2) == (NONE, [str(i).encode() for i in range(2, 10)])


def test_kafka_answers(broker: BrokerThread) -> None:
    assert create(broker.port, "topic-1", 2).error_code == NONE
    assert create(broker.port, "compacted", 1, cleanup_policy="compact").error_code == NONE
    _produce_each(broker.port, "topic-1", 10)
    broker.call(lambda: broker.broker.coordinator.ensure_offsets_topic())  # type: ignore[union-attr]
    answers = delete_records(
        broker.port,
        {
            ("topic-1", 0): 15,  # past the high watermark
            ("topic-1", 1): -1,  # the high watermark: 0, nothing produced
            ("invalid-topic", 0): 1,
            ("topic-1", 7): 1,
            ("__consumer_offsets", 0): 0,
            ("compacted", 0): 0,
        },
    )
    assert answers == {
        ("topic-1", 0): (OUT_OF_RANGE, -1),
        ("topic-1", 1): (NONE, 0),
        ("invalid-topic", 0): (ErrorCode.unknown_topic_or_partition, -1),
        ("topic-1", 7): (ErrorCode.unknown_topic_or_partition, -1),
        ("__consumer_offsets", 0): (ErrorCode.invalid_topic_exception, -1),
        ("compacted", 0): (ErrorCode.policy_violation, -1),
    }
    assert list_offset(broker.port, "topic-1", 0, EARLIEST) == (NONE, 0)
    # -1 is the high watermark; the log start never moves back.
    assert delete_records(broker.port, {("topic-1", 0): -1}) == {("topic-1", 0): (NONE, 10)}
    assert delete_records(broker.port, {("topic-1", 0): 4}) == {("topic-1", 0): (NONE, 10)}
    assert fetch(broker.port, "topic-1", 0, 10) == (NONE, [])
    assert produce(broker.port, "topic-1", 0, b"after") == (NONE, 10)
    assert fetch(broker.port, "topic-1", 0, 10) == (NONE, [b"after"])


def test_the_log_start_survives_a_restart_and_retention_follows_it(tmp_path: Path) -> None:
    settings = {"log_segment_bytes": 200, "log_retention_check_interval_ms": 100}
    first = BrokerThread(tmp_path, **settings).start()
    try:
        assert create(first.port, "orders", 1).error_code == NONE
        _produce_each(first.port, "orders", 12)
        assert delete_records(first.port, {("orders", 0): 7}) == {("orders", 0): (NONE, 7)}
        directory = tmp_path / "orders-0"
        segments = lambda: sorted(int(p.stem) for p in directory.glob("*.log"))  # noqa: E731
        # Whole segments before the log start go; the one holding it stays.
        wait_for(lambda: segments()[0] > 0)
        assert segments()[0] <= 7 < [*segments(), 99][1]
        assert list_offset(first.port, "orders", 0, EARLIEST) == (NONE, 7)
    finally:
        first.stop()
    again = BrokerThread(tmp_path, **settings).start()
    try:
        assert list_offset(again.port, "orders", 0, EARLIEST) == (NONE, 7)
        assert fetch(again.port, "orders", 0, 6) == (OUT_OF_RANGE, [])
        assert fetch(again.port, "orders", 0, 7)[1][0] == b"7"
    finally:
        again.stop()


def test_the_log_start_survives_kill_9(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        assert create(broker.port, "orders", 2).error_code == NONE
        _produce_each(broker.port, "orders", 5)
        _produce_each(broker.port, "orders", 3, partition=1)
        answer = delete_records(broker.port, {("orders", 0): 3, ("orders", 1): -1})
        assert answer == {("orders", 0): (NONE, 3), ("orders", 1): (NONE, 3)}
        broker.kill()
        broker.start()
        assert list_offset(broker.port, "orders", 0, EARLIEST) == (NONE, 3)
        assert list_offset(broker.port, "orders", 1, EARLIEST) == (NONE, 3)
        assert fetch(broker.port, "orders", 0, 3)[1] == [b"3", b"4"]
    finally:
        broker.stop()


def test_a_topic_created_again_starts_at_zero(broker: BrokerThread) -> None:
    from topic_admin_wire import delete

    assert create(broker.port, "orders", 1).error_code == NONE
    _produce_each(broker.port, "orders", 3)
    assert delete_records(broker.port, {("orders", 0): 2}) == {("orders", 0): (NONE, 2)}
    assert NONE in delete(broker.port, "orders")
    assert create(broker.port, "orders", 1).error_code == NONE
    assert list_offset(broker.port, "orders", 0, EARLIEST) == (NONE, 0)
    checkpoint = (broker.log_dir / "log-start-offset-checkpoint").read_text()
    assert checkpoint == "0\n0\n"
