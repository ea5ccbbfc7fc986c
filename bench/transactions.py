"""Transactions against a `kgroups serve` on loopback, with confluent-kafka.

Prints one JSON object per case:

- ``produce``: transactions per second of a transactional producer writing
  ``--records`` records per transaction to one partition, then spread over
  ten partitions; beside it, the anchor of the same run: an idempotent
  producer writing the same records, flushed after each group of
  ``--records`` (the same round trips without the transaction) and streamed
  (one flush at the end).
- ``fetch``: records per second of a read_committed consumer over a
  partition holding committed and aborted transactions (one in
  ``--abort-every`` is aborted), beside read_uncommitted on the same data.

Usage:

    .venv/bin/python bench/transactions.py [--transactions 1000] [--records 10]
        [--fetch-transactions 2000] [--fetch-records 100] [--abort-every 5]
        [--bootstrap HOST:PORT]

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from process_broker import BrokerProcess

PAYLOAD = b"x" * 100


def create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def transactional(bootstrap: str, txn_id: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 1}
    )
    producer.init_transactions(30)
    return producer


def transactions(
    bootstrap: str, topic: str, partitions: int, count: int, records: int, abort_every: int = 0
) -> dict[str, float]:
    """``count`` transactions of ``records`` records, round robin over the
    partitions; one in ``abort_every`` is aborted (none if 0)."""
    producer = transactional(bootstrap, f"bench-{topic}")
    started = time.perf_counter()
    for n in range(count):
        producer.begin_transaction()
        for i in range(records):
            producer.produce(topic, PAYLOAD, partition=i % partitions)
        if abort_every and n % abort_every == abort_every - 1:
            producer.flush(30)  # abort_transaction drops what is still unsent
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    elapsed = time.perf_counter() - started
    return rates(count, records, elapsed)


def idempotent(
    bootstrap: str, topic: str, partitions: int, count: int, records: int, flush_each: bool
) -> dict[str, float]:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 1}
    )
    producer.produce(topic, PAYLOAD, partition=0)  # the producer id, off the clock
    assert producer.flush(30) == 0
    started = time.perf_counter()
    for _ in range(count):
        for i in range(records):
            producer.produce(topic, PAYLOAD, partition=i % partitions)
        if flush_each:
            assert producer.flush(30) == 0
        else:
            producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.perf_counter() - started
    return rates(count, records, elapsed)


def rates(count: int, records: int, elapsed: float) -> dict[str, float]:
    return {
        "transactions_per_s": round(count / elapsed, 1),
        "records_per_s": round(count * records / elapsed, 1),
        "seconds": round(elapsed, 3),
    }


def fetch(bootstrap: str, topic: str, isolation: str) -> dict[str, float]:
    """Reads the partition from the start to its end (to the last stable
    offset for read_committed)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{isolation}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    started = time.perf_counter()
    got = 0
    done = False
    while not done:
        for message in consumer.consume(10000, 1.0):
            error = message.error()
            if error is None:
                got += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                done = True
    elapsed = time.perf_counter() - started
    consumer.close()
    return {
        "records": got,
        "records_per_s": round(got / elapsed, 1),
        "seconds": round(elapsed, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transactions", type=int, default=1000)
    ap.add_argument("--records", type=int, default=10, help="records per transaction")
    ap.add_argument("--fetch-transactions", type=int, default=2000)
    ap.add_argument("--fetch-records", type=int, default=100)
    ap.add_argument("--abort-every", type=int, default=5)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()

    broker = None
    if args.bootstrap is None:
        broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="kgbench.")) / "data").start()
    bootstrap = args.bootstrap or broker.bootstrap  # type: ignore[union-attr]
    run = int(time.time())
    try:
        for partitions in (1, 10):
            topic = f"txn-{partitions}p-{run}"
            create(bootstrap, topic, partitions)
            case = {
                "bench": "transactions",
                "case": "produce",
                "partitions_per_transaction": partitions,
                "records_per_transaction": args.records,
                "transactions": args.transactions,
                "transactional": transactions(
                    bootstrap, topic, partitions, args.transactions, args.records
                ),
                "idempotent_flush_each": idempotent(
                    bootstrap, topic, partitions, args.transactions, args.records, True
                ),
                "idempotent_stream": idempotent(
                    bootstrap, topic, partitions, args.transactions, args.records, False
                ),
            }
            print(json.dumps(case), flush=True)

        topic = f"txn-fetch-{run}"
        create(bootstrap, topic, 1)
        written = transactions(
            bootstrap, topic, 1, args.fetch_transactions, args.fetch_records, args.abort_every
        )
        case = {
            "bench": "transactions",
            "case": "fetch",
            "transactions": args.fetch_transactions,
            "records_per_transaction": args.fetch_records,
            "aborted_one_in": args.abort_every,
            "written": written,
            "read_committed": fetch(bootstrap, topic, "read_committed"),
            "read_uncommitted": fetch(bootstrap, topic, "read_uncommitted"),
        }
        print(json.dumps(case), flush=True)
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
