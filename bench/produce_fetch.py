"""Produce and fetch throughput against a `kgroups serve` on loopback.

Runs confluent-kafka's producer and consumer against kgroups for 1 KB and
100-byte messages, and prints one JSON object per case. Usage:

    .venv/bin/python bench/produce_fetch.py [--messages 200000] [--bootstrap HOST:PORT]

Without --bootstrap it starts `kgroups serve` on a free port with a temporary
data directory and stops it afterwards.

With --mock, the anchor is librdkafka's in-memory mock cluster
(bench/mock_cluster.py) instead: both servers get the same 1 KB records in
``--topics`` topics of 4 partitions (the mock's), written by an idempotent
``acks=all`` producer, then each is read from the start by a consumer with
``fetch.max.bytes`` 64 MiB and ``fetch.queue.backoff.ms`` 10, ``--rounds``
times, the two servers alternating, so that each kgroups figure has a mock
figure of the same minute beside it. Each fetch line gives MB/s, the ratio
kgroups / mock of its round, and the server's CPU seconds per 100 MB (from
/proc):

    .venv/bin/python bench/produce_fetch.py --mock [--topics 21] [--per-topic 16000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from heartbeats import cpu_seconds
from mock_cluster import MockCluster

from process_broker import BrokerProcess

MOCK_PARTITIONS = 4  # every topic of librdkafka's mock has 4 partitions


def produce(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    payload = b"x" * size
    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=payload, key=str(i % 1000).encode())
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    elapsed = time.perf_counter() - started
    return {
        "messages_per_s": count / elapsed,
        "mb_per_s": count * size / elapsed / 1e6,
        "seconds": elapsed,
    }


def fetch(bootstrap: str, topic: str, count: int, size: int, partitions: int) -> dict[str, float]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    started = time.perf_counter()
    got = 0
    while got < count:
        batch = consumer.consume(10000, 1.0)
        got += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return {
        "messages_per_s": count / elapsed,
        "mb_per_s": count * size / elapsed / 1e6,
        "seconds": elapsed,
    }


def kafka_python_produce(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=1_000_000)
    payload = b"x" * size
    started = time.perf_counter()
    for i in range(count):
        producer.send(topic, value=payload, key=str(i % 1000).encode())
    producer.flush(120)
    elapsed = time.perf_counter() - started
    producer.close()
    return {
        "messages_per_s": count / elapsed,
        "mb_per_s": count * size / elapsed / 1e6,
        "seconds": elapsed,
    }


def kafka_python_fetch(
    bootstrap: str, topic: str, count: int, size: int, partitions: int
) -> dict[str, float]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        fetch_max_bytes=52428800,
        max_partition_fetch_bytes=10485760,
    )
    parts = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    started = time.perf_counter()
    got = 0
    while got < count:
        got += sum(len(v) for v in consumer.poll(1000, max_records=100000).values())
    elapsed = time.perf_counter() - started
    consumer.close()
    return {
        "messages_per_s": count / elapsed,
        "mb_per_s": count * size / elapsed / 1e6,
        "seconds": elapsed,
    }


def produce_idempotent(
    bootstrap: str, topics: list[str], per_topic: int, size: int
) -> dict[str, float]:
    """``per_topic`` records of ``size`` bytes to each topic, spread over its
    partitions, by an idempotent acks=all producer."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    payload = b"x" * size
    count = per_topic * len(topics)
    started = time.perf_counter()
    for i in range(count):
        topic = topics[i % len(topics)]
        while True:
            try:
                producer.produce(topic, value=payload, partition=(i // len(topics)) % 4)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(300) == 0
    elapsed = time.perf_counter() - started
    return {"mb_per_s": round(count * size / elapsed / 1e6, 1), "seconds": round(elapsed, 2)}


def fetch_all(bootstrap: str, topics: list[str], count: int, size: int) -> dict[str, float]:
    """Every record of ``topics`` read from the start by one consumer."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * 1024 * 1024,
            # librdkafka pauses fetching for this long once its queue holds
            # queued.min.messages; the default (1 s) would leave it idle.
            "fetch.queue.backoff.ms": 10,
        }
    )
    consumer.assign(
        [TopicPartition(t, p, OFFSET_BEGINNING) for t in topics for p in range(MOCK_PARTITIONS)]
    )
    started = time.perf_counter()
    got = 0
    while got < count:
        got += sum(1 for m in consumer.consume(10000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return {"mb_per_s": round(count * size / elapsed / 1e6, 1), "seconds": round(elapsed, 2)}


def against_mock(args: argparse.Namespace) -> None:
    size = 1000
    topics = [f"fetch-{i}" for i in range(args.topics)]
    count = args.per_topic * len(topics)
    broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="kgbench.")) / "data").start()
    mock = MockCluster().start(tuple(topics))
    servers = {"kgroups": (broker.bootstrap, broker.proc), "mock": (mock.bootstrap, mock.proc)}
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        created = admin.create_topics([NewTopic(t, MOCK_PARTITIONS, 1) for t in topics])
        for future in created.values():
            future.result(30)
        produced = {}
        for name, (bootstrap, proc) in servers.items():
            pid = proc.pid if proc is not None else None
            cpu = cpu_seconds(pid)
            p = produce_idempotent(bootstrap, topics, args.per_topic, size)
            p["server_cpu_s_per_100mb"] = round(
                (cpu_seconds(pid) - cpu) * 100e6 / (count * size), 3
            )
            produced[name] = p
            print(json.dumps({"bench": "produce_fetch", "server": name, "produce": p}), flush=True)
        ratio = round(produced["kgroups"]["mb_per_s"] / produced["mock"]["mb_per_s"], 2)
        print(json.dumps({"bench": "produce_fetch", "produce_kgroups_vs_mock": ratio}), flush=True)
        for r in range(args.rounds):
            figures = {}
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for name in order:
                bootstrap, proc = servers[name]
                pid = proc.pid if proc is not None else None
                cpu = cpu_seconds(pid)
                f = fetch_all(bootstrap, topics, count, size)
                f["server_cpu_s_per_100mb"] = round(
                    (cpu_seconds(pid) - cpu) * 100e6 / (count * size), 3
                )
                figures[name] = f
            print(
                json.dumps(
                    {
                        "bench": "produce_fetch",
                        "round": r,
                        "messages": count,
                        "message_bytes": size,
                        "fetch": figures,
                        "kgroups_vs_mock": round(
                            figures["kgroups"]["mb_per_s"] / figures["mock"]["mb_per_s"], 2
                        ),
                    }
                ),
                flush=True,
            )
    finally:
        mock.stop()
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--bootstrap")
    ap.add_argument("--mock", action="store_true", help="fetch beside librdkafka's mock cluster")
    ap.add_argument("--topics", type=int, default=21)
    ap.add_argument("--per-topic", type=int, default=16_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.mock:
        against_mock(args)
        return
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = None
    if args.bootstrap is None:
        broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="kgbench.")) / "data").start()
    bootstrap = args.bootstrap or broker.bootstrap  # type: ignore[union-attr]
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for size in (1000, 100):
            topic = f"bench-{size}-{int(time.time())}"
            admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(20)
            p = produce(bootstrap, topic, args.messages, size)
            f = fetch(bootstrap, topic, args.messages, size, args.partitions)
            print(
                json.dumps(
                    {
                        "bench": "produce_fetch",
                        "client": "confluent-kafka",
                        "message_bytes": size,
                        "messages": args.messages,
                        "produce": p,
                        "fetch": f,
                    }
                )
            )
            # Anchor: kafka-python on the same broker and input, in the same run.
            anchor = topic + "-kafka-python"
            admin.create_topics([NewTopic(anchor, args.partitions, 1)])[anchor].result(20)
            count = min(args.messages, 100_000)
            p = kafka_python_produce(bootstrap, anchor, count, size)
            f = kafka_python_fetch(bootstrap, anchor, count, size, args.partitions)
            print(
                json.dumps(
                    {
                        "bench": "produce_fetch",
                        "client": "kafka-python",
                        "message_bytes": size,
                        "messages": count,
                        "produce": p,
                        "fetch": f,
                    }
                )
            )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
