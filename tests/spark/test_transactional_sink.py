"""The sink with kgroups.transactional: a write appears whole to read_committed
readers once the driver commits, and a failed write not at all."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic

from broker_thread import BrokerThread

pytestmark = pytest.mark.spark


def _read(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{isolation}",
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < expected and time.monotonic() < deadline:
        values += [m.value() for m in consumer.consume(100, 0.3) if m.error() is None]
    end = time.monotonic() + 1
    while time.monotonic() < end:
        values += [m.value() for m in consumer.consume(100, 0.3) if m.error() is None]
    consumer.close()
    return values


def _end_offsets(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check-ends"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in (0, 1)]
    finally:
        consumer.close()


def _write(spark: Any, bootstrap: str, rows: list[tuple[Any, ...]]) -> None:
    (
        spark.createDataFrame(rows, "value binary, topic string, partition int")
        .repartition(2)
        .write.format("kgroups")
        .mode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kgroups.transactional", "true")
        .save()
    )


def test_a_transactional_write_is_seen_whole_or_not_at_all(
    spark: Any, spark_broker: BrokerThread
) -> None:
    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "txsink", 2)
    _write(spark, bootstrap, [(f"v{i}".encode(), "txsink", i % 2) for i in range(50)])
    assert sorted(_read(bootstrap, "txsink", "read_committed", 50)) == sorted(
        f"v{i}".encode() for i in range(50)
    )
    # Each task's transaction ends with a commit marker in each partition it wrote.
    assert _end_offsets(bootstrap, "txsink") == [25 + 2, 25 + 2]

    create_topic(bootstrap, "txfail", 2)
    rows: list[tuple[Any, ...]] = [(f"f{i}".encode(), "txfail", i % 2) for i in range(50)]
    rows.append((b"no topic", None, 0))  # fails its task after others were sent
    with pytest.raises(Exception, match="null topic"):
        _write(spark, bootstrap, rows)
    assert _read(bootstrap, "txfail", "read_committed", 0) == []


def test_a_transactional_stream_commits_each_micro_batch(
    spark: Any, spark_broker: BrokerThread, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "txsource", 2)
    _write(spark, bootstrap, [(f"s{i}".encode(), "txsource", i % 2) for i in range(40)])
    create_topic(bootstrap, "txcopy", 2)
    query = (
        spark.readStream.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "txsource")
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .option("maxOffsetsPerTrigger", "20")
        .load()
        .selectExpr("value", "partition")
        .writeStream.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "txcopy")
        .option("kgroups.transactional", "true")
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(60)
    assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) >= 2
    assert sorted(_read(bootstrap, "txcopy", "read_committed", 40)) == sorted(
        f"s{i}".encode() for i in range(40)
    )
