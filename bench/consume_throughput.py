"""Throughput of kgroups' own client beside kafka-python's, against `kgroups serve`.

In one run, on one broker subprocess:

- produce: our Producer and kafka-python's KafkaProducer each send the same
  number of records (keyed, ``--size`` bytes) and wait for every acknowledgement;
- consume: our Consumer and kafka-python's KafkaConsumer, each in a new group,
  read the very same records (the ones our producer wrote) from the earliest
  offset, end to end: from creating the consumer -- group join included -- to
  the last record in hand.

Prints one JSON object. Usage:

    .venv/bin/python bench/consume_throughput.py [--messages 200000] [--size 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from process_broker import BrokerProcess


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def rates(count: int, size: int, seconds: float) -> dict[str, float]:
    return {
        "messages_per_s": round(count / seconds),
        "mb_per_s": round(count * size / seconds / 1e6, 2),
        "seconds": round(seconds, 3),
    }


def produce_ours(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from kgroups.client import Producer

    payload = b"x" * size
    producer = Producer({"bootstrap.servers": bootstrap})
    started = time.perf_counter()
    futures = [producer.send(topic, payload, key=str(i % 1000).encode()) for i in range(count)]
    producer.flush()
    elapsed = time.perf_counter() - started
    assert all(f.exception() is None for f in futures[:: max(1, count // 1000)])
    producer.close()
    return rates(count, size, elapsed)


def produce_kafka_python(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from kafka import KafkaProducer

    payload = b"x" * size
    # The same settings as ours: acks=all, 16 KB batches, 5 ms linger.
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    started = time.perf_counter()
    futures = [producer.send(topic, payload, key=str(i % 1000).encode()) for i in range(count)]
    producer.flush()
    elapsed = time.perf_counter() - started
    assert all(f.exception is None for f in futures[:: max(1, count // 1000)])
    producer.close()
    return rates(count, size, elapsed)


def consume_ours(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from kgroups.client import Consumer

    started = time.perf_counter()
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-ours", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen = payload = 0
    first = 0.0
    while seen < count:
        records = consumer.poll(1.0)
        if records and not first:
            first = time.perf_counter() - started
        for record in records:
            seen += 1
            payload += len(record.value or b"")
    elapsed = time.perf_counter() - started
    consumer.close()
    assert payload == count * size
    return {**rates(count, size, elapsed), "first_record_s": round(first, 3)}


def consume_kafka_python(bootstrap: str, topic: str, count: int, size: int) -> dict[str, float]:
    from kafka import KafkaConsumer

    started = time.perf_counter()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id="bench-kafka-python", auto_offset_reset="earliest"
    )
    consumer.subscribe([topic])
    seen = payload = 0
    first = 0.0
    while seen < count:
        batches = consumer.poll(1000)
        if batches and not first:
            first = time.perf_counter() - started
        for records in batches.values():
            for record in records:
                seen += 1
                payload += len(record.value or b"")
    elapsed = time.perf_counter() - started
    consumer.close()
    assert payload == count * size
    return {**rates(count, size, elapsed), "first_record_s": round(first, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()
    count, size = args.messages, args.size
    result: dict[str, Any] = {
        "messages": count,
        "message_bytes": size,
        "partitions": args.partitions,
    }
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            create_topic(broker.bootstrap, "ours", args.partitions)
            create_topic(broker.bootstrap, "kafka-python", args.partitions)
            result["produce"] = {
                "kgroups": produce_ours(broker.bootstrap, "ours", count, size),
                "kafka_python": produce_kafka_python(broker.bootstrap, "kafka-python", count, size),
            }
            result["consume"] = {
                "kgroups": consume_ours(broker.bootstrap, "ours", count, size),
                "kafka_python": consume_kafka_python(broker.bootstrap, "ours", count, size),
            }
        finally:
            broker.stop()
    for kind in ("produce", "consume"):
        ours, theirs = result[kind]["kgroups"], result[kind]["kafka_python"]
        result[kind]["kgroups_vs_kafka_python"] = round(
            ours["messages_per_s"] / theirs["messages_per_s"], 2
        )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
