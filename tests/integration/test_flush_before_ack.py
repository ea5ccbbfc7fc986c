"""With a flush policy that fsyncs every message, Produce is acknowledged only
once its fsync succeeded; a failed fsync fails the request and takes the
partition offline (KAFKA_STORAGE_ERROR from then on), as a log directory
failure does in Kafka."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest
from faulty_disk import FaultyDisk

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FaultyDisk:
    return FaultyDisk(monkeypatch, tmp_path)


@pytest.fixture
def fsyncing_broker(tmp_path: Path, disk: FaultyDisk) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", log_flush_interval_messages=1).start()
    try:
        yield b
    finally:
        disk.release()
        b.stop()


def _producer(bootstrap: str) -> object:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "linger.ms": 0})


def _create(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(20)


def test_produce_is_acknowledged_after_its_fsync(
    fsyncing_broker: BrokerThread, disk: FaultyDisk
) -> None:
    _create(fsyncing_broker.bootstrap, "t")
    producer = _producer(fsyncing_broker.bootstrap)
    delivered: list[int] = []
    producer.produce("t", b"warm-up", partition=0)  # type: ignore[attr-defined]
    assert producer.flush(10) == 0  # type: ignore[attr-defined]
    disk.hold("fdatasync")
    producer.produce(  # type: ignore[attr-defined]
        "t", b"x", partition=0, on_delivery=lambda err, msg: delivered.append(msg.offset())
    )
    assert producer.flush(1.5) == 1  # type: ignore[attr-defined]
    assert delivered == []  # written, not yet fsynced: not acknowledged
    disk.release()
    assert producer.flush(10) == 0  # type: ignore[attr-defined]
    assert delivered == [1]


def test_a_failed_fsync_fails_the_produce_and_takes_the_partition_offline(
    fsyncing_broker: BrokerThread, disk: FaultyDisk, caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import KafkaError

    _create(fsyncing_broker.bootstrap, "t")
    producer = _producer(fsyncing_broker.bootstrap)
    results: list[tuple[int, int | None]] = []

    def send(partition: int) -> tuple[int, int | None]:
        def on_delivery(err: KafkaError | None, msg: object) -> None:
            results.append((partition, err.code() if err else None))

        producer.produce("t", b"x", partition=partition, on_delivery=on_delivery)  # type: ignore[attr-defined]
        producer.flush(10)  # type: ignore[attr-defined]
        return results[-1]

    assert send(0) == (0, None)
    disk.fail("fdatasync", errno.EIO, name_contains="t-0/")
    assert send(0) == (0, KafkaError.KAFKA_STORAGE_ERROR)
    assert "offline" in caplog.text
    disk.heal()
    # Offline from now on, though fsync works again; the other partition is fine.
    assert send(0) == (0, KafkaError.KAFKA_STORAGE_ERROR)
    assert send(1) == (1, None)
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": fsyncing_broker.bootstrap, "group.id": "g"})
    try:
        with pytest.raises(KafkaException) as exc:
            consumer.get_watermark_offsets(TopicPartition("t", 0), timeout=10)
        assert exc.value.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR
        assert consumer.get_watermark_offsets(TopicPartition("t", 1), timeout=10) == (0, 1)
    finally:
        consumer.close()
