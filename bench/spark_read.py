"""Spark figures against a `kgroups serve` subprocess, each beside confluent-kafka.

- batch read: 1 M records of 100 bytes (2 partitions) read by
  ``spark.read.format("kgroups")`` into Spark's no-op sink, rows/s, beside
  confluent-kafka consuming the same records in the same run (the ratio is the
  figure to watch: target >= 0.5);
- streaming source: the same records through ``readStream`` with
  ``trigger(availableNow=True)`` and ``maxOffsetsPerTrigger``, rows/s;
- analytics: ``kgroups analytics`` over 1 M offset commits (standalone commits
  from 20 groups to a 50-partition topic), seconds on local[2].

Prints one JSON object. Usage:

    .venv/bin/python bench/spark_read.py [--records 1000000] [--commits 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from kgroups.client.admin import Admin

from process_broker import BrokerProcess


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    payload = b"x" * 100
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=payload, key=b"%d" % i, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0


def confluent_rate(bootstrap: str, topic: str, count: int, partitions: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-confluent",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    started = time.perf_counter()
    got = 0
    while got < count:
        for message in consumer.consume(10000, 1.0):
            if message.error() is None:
                message.value()
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return count / elapsed


def batch_rate(spark: Any, bootstrap: str, topic: str, count: int) -> float:
    started = time.perf_counter()
    (
        spark.read.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return count / (time.perf_counter() - started)


def stream_rate(spark: Any, bootstrap: str, topic: str, count: int, checkpoint: str) -> float:
    started = time.perf_counter()
    query = (
        spark.readStream.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(count // 4))
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    assert rows == count, rows
    return count / (time.perf_counter() - started)


async def commit(bootstrap: str, commits: int, groups: int, partitions: int) -> float:
    admins = [Admin(bootstrap) for _ in range(groups)]
    rounds = commits // (groups * partitions)
    started = time.perf_counter()

    async def one(i: int) -> None:
        for r in range(rounds):
            await admins[i].commit(
                f"bench-g{i}", {("commit-data", p): r for p in range(partitions)}
            )

    await asyncio.gather(*(one(i) for i in range(groups)))
    elapsed = time.perf_counter() - started
    for admin in admins:
        await admin.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=1_000_000)
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import SparkSession

    import kgroups.spark
    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    work = Path(tempfile.mkdtemp(prefix="kgbench-spark."))
    broker = BrokerProcess(work / "data").start()
    out: dict[str, Any] = {"bench": "spark_read", "records": args.records, "record_bytes": 100}
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for name, partitions in (("bench", 2), ("commit-data", 50)):
            admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
        produce(broker.bootstrap, "bench", args.records, 2)
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        kgroups.spark.register(spark)
        cold = batch_rate(spark, broker.bootstrap, "bench", args.records)
        confluent = confluent_rate(broker.bootstrap, "bench", args.records, 2)
        batch = batch_rate(spark, broker.bootstrap, "bench", args.records)
        stream = stream_rate(spark, broker.bootstrap, "bench", args.records, str(work / "cp"))
        out["confluent_kafka_rows_per_s"] = round(confluent)
        out["batch_read_rows_per_s"] = round(batch)
        out["batch_read_first_query_rows_per_s"] = round(cold)
        out["batch_read_vs_confluent"] = round(batch / confluent, 2)
        out["stream_read_rows_per_s"] = round(stream)
        out["stream_read_vs_confluent"] = round(stream / confluent, 2)

        produce(broker.bootstrap, "commit-data", 100_000, 50)
        out["commits"] = args.commits
        out["commit_seconds"] = round(
            asyncio.run(commit(broker.bootstrap, args.commits, 20, 50)), 1
        )
        started = time.perf_counter()
        summary = run_analytics(
            spark,
            AnalyticsConfig(bootstrap=broker.bootstrap, output=str(work / "analytics")),
            Progress(steps=7),
        )
        out["analytics_seconds"] = round(time.perf_counter() - started, 1)
        out["analytics_commits_read"] = summary["commits"]
        spark.stop()
    finally:
        broker.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
