"""A producer capped by producer_byte_rate against one that is not, on the
same `kgroups serve`.

Two confluent-kafka producers (client ids "capped" and "free"), each in a
process of its own, send 10 kB messages as fast as they can for --seconds; the
capped one has a quota of --quota bytes/s. Delivered payload bytes are counted
from the delivery reports after --warmup seconds (a quota lets a first burst
through: the rate is measured over quota.window.num windows). The free
producer is also run alone first, as the baseline it should keep, and the
throttle times the broker gave each client are read from its metrics
endpoint. Prints one JSON object. Usage:

    .venv/bin/python bench/quotas.py [--quota 1048576] [--seconds 40] [--warmup 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kgroups.client.admin import Admin
from kgroups.testing.process_broker import free_port

from process_broker import BrokerProcess

MESSAGE = 10_000


def run_producer(
    bootstrap: str,
    topic: str,
    client_id: str,
    seconds: float,
    warmup: float,
    out: multiprocessing.Queue[tuple[str, float]],
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
    out.put((client_id, counted / measured))


def rates_of(bootstrap: str, topics: list[str], seconds: float, warmup: float) -> dict[str, float]:
    """Run one producer process per topic (client id = topic) at once."""
    spawn = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[str, float]] = spawn.Queue()
    processes = [
        spawn.Process(target=run_producer, args=(bootstrap, topic, topic, seconds, warmup, results))
        for topic in topics
    ]
    for p in processes:
        p.start()
    rates = dict(results.get(timeout=seconds + 180) for _ in processes)
    for p in processes:
        p.join()
    return rates


def throttled_ms(metrics_port: int) -> dict[str, float]:
    """Throttle time given so far, by client id, from the metrics endpoint."""
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=30) as page:
        text = page.read().decode()
    given: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("kafka_server_quota_throttle_time_ms_sum{"):
            client_id = line.split('client_id="', 1)[1].split('"', 1)[0]
            given[client_id] = given.get(client_id, 0.0) + float(line.rsplit(" ", 1)[1])
    return given


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

    metrics_port = free_port()
    broker = BrokerProcess(
        Path(tempfile.mkdtemp(prefix="kgbench.")) / "data", None, f"metrics.port={metrics_port}"
    ).start()
    try:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for topic in ("capped", "free"):
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
        asyncio.run(set_quota(bootstrap, args.quota))
        alone = rates_of(bootstrap, ["free"], args.seconds, args.warmup)
        rates = rates_of(bootstrap, ["capped", "free"], args.seconds, args.warmup)
        throttled = throttled_ms(metrics_port)
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
                    "capped_throttled_ms": throttled.get("capped", 0),
                    "free_throttled_ms": throttled.get("free", 0),
                    "seconds": args.seconds,
                    "warmup": args.warmup,
                }
            )
        )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
