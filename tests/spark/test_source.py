"""The kgroups data source against an in-process broker, with confluent-kafka as
the independent writer and reader of the topics involved."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import committed_offsets, create_topic, produce

from broker_thread import BrokerThread

pytestmark = pytest.mark.spark


def _reader(spark: Any, broker: BrokerThread, **options: str) -> Any:
    reader = spark.read.format("kgroups").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader


def _stream(spark: Any, broker: BrokerThread, **options: str) -> Any:
    reader = spark.readStream.format("kgroups").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_equals_what_was_written(spark: Any, spark_broker: BrokerThread) -> None:
    create_topic(spark_broker.bootstrap, "written", 3)
    records = [(f"k{i}".encode(), f"v{i}".encode() * (i % 7 + 1), i % 3) for i in range(300)]
    produce(spark_broker.bootstrap, "written", records[:150], headers=[("source", b"c")])
    produce(spark_broker.bootstrap, "written", records[150:])
    expected = {}
    for i, (key, value, partition) in enumerate(records):
        expected[(partition, i // 3)] = (key, value, [("source", b"c")] if i < 150 else [])

    rows = _reader(spark, spark_broker, subscribe="written", includeHeaders="true").load()
    assert rows.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    got = {
        (r.partition, r.offset): (r.key, r.value, [(h.key, h.value) for h in r.headers or []])
        for r in rows.collect()
    }
    assert got == expected
    assert rows.filter("topic != 'written' OR timestampType != 0").count() == 0

    sliced = _reader(
        spark,
        spark_broker,
        assign=json.dumps({"written": [0, 2]}),
        startingOffsets=json.dumps({"written": {"0": 10, "2": -2}}),
        endingOffsets=json.dumps({"written": {"0": 20, "2": 5}}),
    ).load()
    assert sorted((r.partition, r.offset, r.value) for r in sliced.collect()) == [
        (p, o, expected[(p, o)][1])
        for p, o in sorted(expected)
        if (p == 0 and 10 <= o < 20) or (p == 2 and o < 5)
    ]

    split = _reader(spark, spark_broker, subscribe="written", minPartitions="6").load()
    assert split.rdd.getNumPartitions() == 6
    assert sorted(
        (r.partition, r.offset) for r in split.select("partition", "offset").collect()
    ) == sorted(expected)

    # 100 records a partition, at most 30 a task: 4 tasks each.
    capped = _reader(spark, spark_broker, subscribe="written", maxRecordsPerPartition="30").load()
    assert capped.rdd.getNumPartitions() == 12
    assert sorted(
        (r.partition, r.offset) for r in capped.select("partition", "offset").collect()
    ) == sorted(expected)


def test_stream_restarts_without_gap_or_duplicate_and_commits_to_its_group(
    spark: Any, spark_broker: BrokerThread, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "events", 2)
    produce(bootstrap, "events", [(None, f"a{i}".encode(), i % 2) for i in range(400)])
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start(**trigger: Any) -> Any:
        stream = _stream(
            spark,
            spark_broker,
            subscribe="events",
            startingOffsets="earliest",
            maxOffsetsPerTrigger="50",
            **{"group.id": "events-to-parquet"},
        )
        return (
            stream.select("partition", "offset", "value")
            .writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    query = start(processingTime="0 seconds")
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(set(seen)) < 3:
        total = sum(committed_offsets(bootstrap, "events-to-parquet", "events", 2).values())
        if total and (not seen or total != seen[-1]):
            seen.append(total)
        time.sleep(0.2)
    query.stop()
    assert len(set(seen)) >= 3 and seen == sorted(seen), seen
    stopped_at = spark.read.parquet(out).count()
    assert 0 < stopped_at < 400

    produce(bootstrap, "events", [(None, f"b{i}".encode(), i % 2) for i in range(100)])
    query = start(availableNow=True)
    assert query.awaitTermination(90)
    rows = spark.read.parquet(out).collect()
    for partition in (0, 1):
        offsets = sorted(r.offset for r in rows if r.partition == partition)
        assert offsets == list(range(250)), f"partition {partition}: gap or duplicate"
    assert committed_offsets(bootstrap, "events-to-parquet", "events", 2) == {0: 250, 1: 250}


def test_available_now_drains_and_stops(spark: Any, spark_broker: BrokerThread) -> None:
    create_topic(spark_broker.bootstrap, "drain", 3)
    produce(spark_broker.bootstrap, "drain", [(None, b"x", i % 3) for i in range(120)])
    stream = _stream(
        spark,
        spark_broker,
        subscribe="drain",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="50",
    )
    query = (
        stream.writeStream.format("memory").queryName("drained").trigger(availableNow=True).start()
    )
    assert query.awaitTermination(60)
    assert spark.table("drained").count() == 120
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [50, 50, 20]


def test_sink_rows_arrive(spark: Any, spark_broker: BrokerThread, tmp_path: Path) -> None:
    from confluent_kafka import Consumer, TopicPartition

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "sink", 2)
    rows = spark.createDataFrame(
        [(f"k{i}", f"v{i}".encode(), "sink", i % 2) for i in range(50)],
        "key string, value binary, topic string, partition int",
    ).selectExpr("*", "array(named_struct('key', 'n', 'value', CAST(key AS BINARY))) AS headers")
    rows.write.format("kgroups").mode("append").option("kafka.bootstrap.servers", bootstrap).save()

    create_topic(bootstrap, "sink-copy", 1)
    copy = (
        _stream(spark, spark_broker, subscribe="sink", startingOffsets="earliest")
        .selectExpr("key", "value")
        .writeStream.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "sink-copy")
        .option("checkpointLocation", str(tmp_path / "copy"))
        .trigger(availableNow=True)
        .start()
    )
    assert copy.awaitTermination(60)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check-sink"})
    consumer.assign(
        [
            TopicPartition("sink", 0, 0),
            TopicPartition("sink", 1, 0),
            TopicPartition("sink-copy", 0, 0),
        ]
    )
    got: dict[str, set[tuple[int, bytes, bytes, Any]]] = {"sink": set(), "sink-copy": set()}
    deadline = time.monotonic() + 30
    while sum(map(len, got.values())) < 100 and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            assert m.error() is None
            partition = m.partition() if m.topic() == "sink" else -1
            got[m.topic()].add((partition, m.key(), m.value(), tuple(m.headers() or ())))
    consumer.close()
    assert got["sink"] == {
        (i % 2, f"k{i}".encode(), f"v{i}".encode(), (("n", f"k{i}".encode()),)) for i in range(50)
    }
    assert {(k, v) for _, k, v, _ in got["sink-copy"]} == {
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(50)
    }


@pytest.mark.parametrize(
    ("options", "named", "stream"),
    [
        ({"subscribe": "t"}, "kafka.bootstrap.servers", False),
        ({}, "subscribe", False),
        ({"subscribe": "t", "assign": '{"t":[0]}'}, "subscribe", False),
        ({"subscibe": "t"}, "did you mean 'subscribe'", False),
        ({"subscribe": "t", "startingOffsets": "bogus"}, "startingOffsets", False),
        ({"subscribe": "t", "endingOffsets": "latest"}, "endingOffsets", True),
        ({"subscribe": "t", "maxOffsetsPerTrigger": "-3"}, "maxOffsetsPerTrigger", True),
        ({"subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss", False),
        ({"subscribe": "t", "kafka.fetch.max.bytez": "1"}, "fetch.max.bytez", False),
        ({"subscribe": "t", "kafka.group.id": "g"}, "kafka.group.id", True),
    ],
)
def test_bad_options_name_the_option(
    spark: Any, spark_broker: BrokerThread, options: dict[str, str], named: str, stream: bool
) -> None:
    bootstrap = (
        {}
        if "subscribe" in options and len(options) == 1 and named.startswith("kafka.bootstrap")
        else {"kafka.bootstrap.servers": spark_broker.bootstrap}
    )
    reader = (spark.readStream if stream else spark.read).format("kgroups")
    for key, value in {**bootstrap, **options}.items():
        reader = reader.option(key, value)
    with pytest.raises(Exception) as raised:
        df = reader.load()
        if not stream:
            df.collect()
        else:
            df.writeStream.format("memory").queryName("never").start().processAllAvailable()
    assert named in str(raised.value)
    # The option error alone: nothing raised while cleaning up after it.
    assert "UnboundLocalError" not in str(raised.value)
    assert "cannot access local variable" not in str(raised.value)


def test_writing_without_a_topic_names_the_option(spark: Any, spark_broker: BrokerThread) -> None:
    rows = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="option 'topic'"):
        rows.write.format("kgroups").mode("append").option(
            "kafka.bootstrap.servers", spark_broker.bootstrap
        ).save()
