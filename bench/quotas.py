"""A producer capped by producer_byte_rate against one that is not, on the
same `kgroups serve`.

Two confluent-kafka producers (client ids "capped" and "free") send 10 kB
messages as fast as they can for --seconds; the capped one has a quota of
--quota bytes/s. Delivered payload bytes are counted from the delivery
reports after --warmup seconds (a quota lets a first burst through: the rate
is measured over quota.window.num windows). The free producer is also run
alone first, as the baseline it should keep. Prints one JSON object. Usage:

    .venv/bin/python bench/quotas.py [--quota 1048576] [--seconds 40] [--warmup 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kgroups.client.admin import Admin

from process_broker import BrokerProcess

MESSAGE = 10_000


def run_producer(
    bootstrap: str, topic: str, client_id: str, seconds: float, warmup: float, out: dict[str, float]
) -> None:
    """Send for ``seconds``; the payload bytes/s delivered after ``warmup``."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "queue.buffering.max.kbytes": 4096,
        }
    )
    payload = b"x" * MESSAGE
    started = time.monotonic()
    counted_from = started + warmup
    delivered = 0

    def on_delivery(error: object, _message: object) -> None:
        nonlocal delivered
        if error is None and time.monotonic() >= counted_from:
            delivered += MESSAGE

    end = started + seconds
    while time.monotonic() < end:
        try:
            producer.produce(topic, payload, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    measured = time.monotonic() - counted_from
    counted = delivered  # what was delivered within the measured span
    producer.flush(120)
    out[client_id] = counted / measured


async def set_quota(bootstrap: str, quota: int) -> None:
    admin = Admin(bootstrap)
    try:
        results = await admin.alter_client_quotas(
            {(("client-id", "capped"),): [("producer_byte_rate", float(quota))]}
        )
        assert all(e is None for e in results.values()), results
    finally:
        await admin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quota", type=int, default=1 << 20)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--warmup", type=float, default=15)
    args = ap.parse_args()
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="kgbench.")) / "data").start()
    try:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for topic in ("capped", "free", "alone"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
        asyncio.run(set_quota(bootstrap, args.quota))
        alone: dict[str, float] = {}
        run_producer(bootstrap, "alone", "free", args.seconds - args.warmup, 0, alone)
        rates: dict[str, float] = {}
        threads = [
            threading.Thread(
                target=run_producer,
                args=(bootstrap, topic, topic, args.seconds, args.warmup, rates),
            )
            for topic in ("capped", "free")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(
            json.dumps(
                {
                    "bench": "quotas",
                    "quota_bytes_per_s": args.quota,
                    "capped_bytes_per_s": round(rates["capped"]),
                    "capped_vs_quota": round(rates["capped"] / args.quota, 3),
                    "free_alone_bytes_per_s": round(alone["free"]),
                    "free_beside_capped_bytes_per_s": round(rates["free"]),
                    "free_beside_vs_alone": round(rates["free"] / alone["free"], 3),
                    "seconds": args.seconds,
                    "warmup": args.warmup,
                }
            )
        )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
