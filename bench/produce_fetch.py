"""Produce and fetch throughput against a `kgroups serve` on loopback.

Runs confluent-kafka's producer and consumer against kgroups for 1 KB and
100-byte messages, and prints one JSON object per case. Usage:

    .venv/bin/python bench/produce_fetch.py [--messages 200000] [--bootstrap HOST:PORT]

Without --bootstrap it starts `kgroups serve` on a free port with a temporary
data directory and stops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from process_broker import BrokerProcess


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()
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
