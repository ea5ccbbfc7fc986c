"""Throughput of kgroups' ShareConsumer beside confluent-kafka's, against `kgroups serve`.

In one run, on one broker subprocess: ``--messages`` records (``--size`` bytes)
are produced to a topic of ``--partitions`` partitions, and the share group of
each client (``share.auto.offset.reset=earliest``) reads them all with one
consumer in implicit acknowledgement mode, end to end: from creating the
consumer -- joining the group included -- to the last record in hand, then one
more poll or commit to accept the last batch. Each client reads with its own
share group, so both read the same records.

Prints one JSON object. Usage:

    .venv/bin/python bench/share_consume.py [--messages 100000] [--size 100] [--partitions 2]
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

TOPIC = "jobs"


def prepare(bootstrap: str, partitions: int, count: int, size: int, groups: list[str]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(30)
    for group in groups:
        entry = ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    payload = b"x" * size
    for i in range(count):
        while True:
            try:
                producer.produce(TOPIC, payload, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def rates(count: int, seconds: float) -> dict[str, float]:
    return {"messages_per_s": round(count / seconds), "seconds": round(seconds, 3)}


def consume_ours(bootstrap: str, count: int) -> dict[str, float]:
    from kgroups.client import ShareConsumer

    started = time.perf_counter()
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "kgroups"})
    consumer.subscribe([TOPIC])
    got = 0
    while got < count:
        got += len(consumer.poll(1.0))
    consumer.commit_sync()
    elapsed = time.perf_counter() - started
    consumer.close()
    return rates(count, elapsed)


def consume_confluent(bootstrap: str, count: int) -> dict[str, float]:
    from confluent_kafka import ShareConsumer

    started = time.perf_counter()
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "confluent"})
    consumer.subscribe([TOPIC])
    got = 0
    while got < count:
        got += sum(1 for m in consumer.poll(1.0) if m.error() is None)
    consumer.poll(0)
    elapsed = time.perf_counter() - started
    consumer.close()
    return rates(count, elapsed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    result: dict[str, Any] = {
        "messages": args.messages,
        "message_bytes": args.size,
        "partitions": args.partitions,
    }
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            prepare(
                broker.bootstrap,
                args.partitions,
                args.messages,
                args.size,
                ["kgroups", "confluent"],
            )
            result["kgroups"] = consume_ours(broker.bootstrap, args.messages)
            result["confluent_kafka"] = consume_confluent(broker.bootstrap, args.messages)
        finally:
            broker.stop()
    result["kgroups_vs_confluent"] = round(
        result["kgroups"]["messages_per_s"] / result["confluent_kafka"]["messages_per_s"], 2
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
