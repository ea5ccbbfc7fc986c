"""Spark figures against a `kgroups serve` subprocess, each beside confluent-kafka.

- batch read: 1 M (and, with ``--records 1000000 10000000``, 10 M) records of
  100 bytes (2 partitions) read by ``spark.read.format("kgroups")`` on local[2]
  into Spark's no-op sink, rows/s, beside one confluent-kafka consumer reading
  the same records in the same run (the ratio is the figure to watch: target
  >= 1.0);
- executor curve (``--executors 1 2 4``): the same read of the largest size on a
  standalone cluster started here (a master and a worker, separate processes,
  from PySpark's own jars; stopped at the end) with 1, 2, 4 one-core executors
  and ``minPartitions`` = the largest count, rows/s, the ratio to confluent and
  the cores Spark's processes kept busy;
- streaming source: the first size through ``readStream`` with
  ``trigger(availableNow=True)`` and ``maxOffsetsPerTrigger``, rows/s;
- analytics: ``kgroups analytics`` over 1 M offset commits (standalone commits
  from 20 groups to a 50-partition topic), seconds on local[2] (``--commits 0``
  skips it).

Prints one JSON object. Usage:

    .venv/bin/python bench/spark_read.py [--records 1000000 ...] [--executors 1 2 4]
        [--commits 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
            # librdkafka pauses fetching for this long once its queue holds
            # queued.min.messages; the default (1 s) would leave it idle.
            "fetch.queue.backoff.ms": 10,
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


def batch_rate(
    spark: Any, bootstrap: str, topic: str, count: int, min_partitions: int | None = None
) -> float:
    started = time.perf_counter()
    reader = (
        spark.read.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    if min_partitions is not None:
        reader = reader.option("minPartitions", str(min_partitions))
    reader.load().write.format("noop").mode("overwrite").save()
    return count / (time.perf_counter() - started)


def tree_cpu_seconds(skip: int) -> float:
    """CPU seconds used so far by this process and its living descendants (the
    Spark JVMs and Python workers), leaving out the subtree of ``skip`` (the broker)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        used[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    total = 0.0
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid != skip:
            total += used.get(pid, 0.0)
            todo += children.get(pid, [])
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def standalone_cluster(work: Path, cores: int) -> Iterator[str]:
    """A Spark master and one worker offering ``cores`` (separate JVMs), stopped on exit."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port = free_port()
    master = f"spark://127.0.0.1:{port}"
    logs = open(work / "standalone.log", "ab")  # noqa: SIM115 - closed below
    deploy = "org.apache.spark.deploy"
    procs = [
        subprocess.Popen(
            [str(spark_class), f"{deploy}.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(free_port())],
            stdout=logs, stderr=subprocess.STDOUT,
        )
    ]  # fmt: skip
    try:
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        procs.append(
            subprocess.Popen(
                [str(spark_class), f"{deploy}.worker.Worker", master, "--host", "127.0.0.1",
                 "--cores", str(cores), "--memory", f"{cores}g",
                 "--work-dir", str(work / "spark-work"), "--webui-port", str(free_port())],
                stdout=logs, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
        yield master
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        logs.close()


def executor_curve(
    work: Path,
    bootstrap: str,
    topic: str,
    count: int,
    executors: list[int],
    confluent: float,
    broker_pid: int,
) -> list[dict[str, Any]]:
    """Rows/s of one batch read with 1, 2, ... one-core executors of a standalone cluster."""
    from pyspark.sql import SparkSession

    import kgroups.spark

    splits = max(executors)
    curve = []
    with standalone_cluster(work, splits) as master:
        for n in executors:
            spark = (
                SparkSession.builder.master(master)
                .appName(f"kgroups-bench-{n}")
                .config("spark.executor.cores", "1")
                .config("spark.cores.max", str(n))
                .config("spark.executor.memory", "512m")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            kgroups.spark.register(spark)
            status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
            deadline = time.time() + 120
            while status.size() < n + 1:  # the driver counts too
                if time.time() > deadline:
                    raise TimeoutError(f"{n} executors did not register")
                time.sleep(0.2)
                status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
            batch_rate(spark, bootstrap, topic, count, splits)  # starts the Python workers
            cpu = tree_cpu_seconds(broker_pid)
            rate = batch_rate(spark, bootstrap, topic, count, splits)
            cpu = tree_cpu_seconds(broker_pid) - cpu
            curve.append(
                {
                    "executors": n,
                    "rows_per_s": round(rate),
                    "vs_confluent": round(rate / confluent, 2),
                    # Cores kept busy by Spark (driver, executors, Python workers).
                    "cores_used": round(cpu * rate / count, 2),
                }
            )
            spark.stop()
    return curve


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
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--executors", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--commits", type=int, default=1_000_000)
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import SparkSession

    import kgroups.spark
    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    work = Path(tempfile.mkdtemp(prefix="kgbench-spark."))
    broker = BrokerProcess(work / "data").start()
    out: dict[str, Any] = {"bench": "spark_read", "record_bytes": 100, "cores": os.cpu_count()}
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topics = {f"bench-{n}": n for n in args.records}
        for name, partitions in [*((t, 2) for t in topics), ("commit-data", 50)]:
            admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        kgroups.spark.register(spark)
        out["local[2]"] = []
        confluent = {}
        for topic, count in topics.items():
            produce(broker.bootstrap, topic, count, 2)
            cold = batch_rate(spark, broker.bootstrap, topic, count)
            confluent[topic] = confluent_rate(broker.bootstrap, topic, count, 2)
            batch = batch_rate(spark, broker.bootstrap, topic, count)
            out["local[2]"].append(
                {
                    "records": count,
                    "confluent_kafka_rows_per_s": round(confluent[topic]),
                    "batch_read_rows_per_s": round(batch),
                    "batch_read_vs_confluent": round(batch / confluent[topic], 2),
                    "batch_read_first_query_rows_per_s": round(cold),
                }
            )
        first, count = next(iter(topics.items()))
        stream = stream_rate(spark, broker.bootstrap, first, count, str(work / "cp"))
        out["stream_read_records"] = count
        out["stream_read_rows_per_s"] = round(stream)
        out["stream_read_vs_confluent"] = round(stream / confluent[first], 2)

        if args.commits:
            produce(broker.bootstrap, "commit-data", 100_000, 50)
            out["commits"] = args.commits
            out["commit_seconds"] = round(
                asyncio.run(commit(broker.bootstrap, args.commits, 20, 50)), 1
            )
            started = time.perf_counter()
            summary = run_analytics(
                spark,
                AnalyticsConfig(bootstrap=broker.bootstrap, output=str(work / "analytics")),
                Progress(steps=8),
            )
            out["analytics_seconds"] = round(time.perf_counter() - started, 1)
            out["analytics_commits_read"] = summary["commits"]
        spark.stop()

        if args.executors:
            # The largest size: on 1 M rows the fixed cost of a query hides the curve.
            largest, count = max(topics.items(), key=lambda item: item[1])
            again = confluent_rate(broker.bootstrap, largest, count, 2)
            out["standalone"] = {
                "records": count,
                "min_partitions": max(args.executors),
                "confluent_kafka_rows_per_s": round(again),
                "executors": executor_curve(
                    work,
                    broker.bootstrap,
                    largest,
                    count,
                    args.executors,
                    again,
                    broker.proc.pid if broker.proc else -1,
                ),
            }
    finally:
        broker.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
