"""Time of one scrape of the broker's metrics endpoint, at scale.

An in-process broker gets T topics x P partitions (10,000 by default), each
with a batch of 10 records, and G groups (1,000) each committing offsets of
O partitions (10), half of them lagging (the record at a lagging committed
offset is inside its batch, so lag in seconds decodes it). Then:

- `first_scrape_ms`: the first scrape, which reads the timestamp of every
  lagging committed offset (later scrapes keep them while offsets stay);
- `scrape_ms_p50` / `scrape_ms_max`: the next scrapes (what a Prometheus
  scraping every 15 s costs the loop in the steady state);
- `http_scrape_ms`: one scrape over HTTP, from the request to the last byte;
- `bytes`, `samples`: the size of the answer.

Scrapes run on the broker's loop: their time is loop time no request gets.
Prints one JSON object. Usage:

    .venv/bin/python bench/metrics_scrape.py [--topics 100] [--partitions 100]
        [--groups 1000] [--offsets-per-group 10] [--scrapes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from kgroups.client.admin import Admin
from kgroups.metrics.broker_endpoint import BrokerMetrics
from kgroups.server.broker import Broker
from kgroups.server.config import BrokerConfig
from kgroups.storage.records import encode_batch


async def _http_get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    body = await reader.read()
    writer.close()
    return body


async def run(args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as data:
        config = BrokerConfig(
            {
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": str(Path(data) / "logs"),
                "metrics.port": "0",
                "group.initial.rebalance.delay.ms": "0",
            }
        )
        broker = Broker(config)
        await broker.start()
        admin = Admin(f"127.0.0.1:{broker.port}")
        try:
            now = broker.clock.now_ms()
            names = [f"topic-{t:04d}" for t in range(args.topics)]
            batch = encode_batch([(None, b"v" * 100, (), now - 60_000 + i) for i in range(10)])
            for name in names:
                broker.create_topic(name, args.partitions, {})
                for p in range(args.partitions):
                    broker.log(name, p).append(batch, now)
            tps = [(n, p) for n in names for p in range(args.partitions)]
            for g in range(args.groups):
                start = g * args.offsets_per_group
                chosen = [tps[(start + i) % len(tps)] for i in range(args.offsets_per_group)]
                # Half of the offsets lag (5 of 10 records left), half are at the end.
                offsets = {tp: 5 if i % 2 else 10 for i, tp in enumerate(chosen)}
                await admin.commit(f"group-{g:05d}", offsets)

            metrics = BrokerMetrics(broker)
            started = time.perf_counter()
            text = metrics.render()
            first = time.perf_counter() - started
            times = []
            for _ in range(args.scrapes):
                started = time.perf_counter()
                metrics.render()
                times.append(time.perf_counter() - started)
            assert broker.metrics is not None
            started = time.perf_counter()
            body = await _http_get(broker.metrics.port)
            http = time.perf_counter() - started
            assert body.startswith(b"HTTP/1.1 200")
            samples = sum(1 for line in text.splitlines() if line and line[0] != "#")
            return {
                "bench": "metrics_scrape",
                "partitions": len(tps),
                "groups": args.groups,
                "committed_offsets": args.groups * args.offsets_per_group,
                "first_scrape_ms": round(first * 1000, 1),
                "scrape_ms_p50": round(statistics.median(times) * 1000, 1),
                "scrape_ms_max": round(max(times) * 1000, 1),
                "http_scrape_ms": round(http * 1000, 1),
                "bytes": len(text),
                "samples": samples,
            }
        finally:
            await admin.close()
            await broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--offsets-per-group", type=int, default=10)
    ap.add_argument("--scrapes", type=int, default=10)
    print(json.dumps(asyncio.run(run(ap.parse_args()))))


if __name__ == "__main__":
    main()
