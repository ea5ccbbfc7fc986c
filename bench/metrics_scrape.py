"""Time of one scrape of the broker's metrics endpoint, at scale.

T topics x P partitions (10,000 by default), each with a batch of 10 records,
and G groups (1,000) each with committed offsets of O partitions (10), half of
them lagging (the record at a lagging committed offset is inside its batch);
and S share partitions (100) of 10 share groups, each with R records in
flight (2,000, Kafka's default limit of record locks), acquired in batches of
10 and every other one accepted, so that each record has a state of its own:
the worst case for a share partition's records.
By default the scrape reads that state from in-memory stand-ins of the logs
and of the coordinator's shards: a broker keeps three files open per
partition, more descriptors at 10,000 partitions than a usual limit of 20,000
allows. `--real` builds it in a real broker instead (commits over the wire;
fewer partitions, e.g. `--real --topics 20`), where looking a timestamp up
reads a batch header from its segment file. Then:

- `first_scrape_ms`: the first scrape, which reads the timestamp of every
  lagging committed offset (later scrapes keep them while offsets stay);
- `scrape_ms_p50` / `scrape_ms_max`: the next scrapes (what a Prometheus
  scraping every 15 s costs the loop in the steady state);
- `http_scrape_ms` (with `--real`): one scrape over HTTP, request to last byte;
- `bytes`, `samples`: the size of the answer;
- `share_walk_ms`: what walking every in-flight record of every share
  partition once costs, the work a scrape spares by reading the counts each
  share partition keeps.

Scrapes run on the broker's loop: their time is loop time no request gets.
Prints one JSON object. Usage:

    .venv/bin/python bench/metrics_scrape.py [--topics 100] [--partitions 100]
        [--groups 1000] [--offsets-per-group 10] [--share-partitions 100]
        [--in-flight 2000] [--scrapes 10] [--real]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from kgroups.client.admin import Admin
from kgroups.clock import SystemClock
from kgroups.config.broker_config import BrokerConfig
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.state import GroupState
from kgroups.coordinator.views import GroupView, MemberView, ShareGroupView
from kgroups.metrics.broker_stats import BrokerStats
from kgroups.metrics.client_telemetry import ClientTelemetry
from kgroups.quotas.client_quotas import ClientQuotas
from kgroups.records.batch import encode_batch, read_header
from kgroups.records.timestamps import estimate
from kgroups.server.broker import Broker
from kgroups.server.metrics_endpoint import BrokerMetrics
from kgroups.share_partitions import (
    AcknowledgementBatch,
    AcknowledgeType,
    RecordState,
    SharePartitionConfig,
)
from kgroups.share_partitions.manager import SharePartitionManager

_MEMBER = MemberView("m-1", None, "client", "/127.0.0.1", 45000, 300000, ("range",), b"")


class _Log:
    """What a scrape reads of a partition log, in memory."""

    closed = offline = False

    def __init__(self, batch: bytes) -> None:
        self.header = read_header(batch)
        self.size = len(batch)
        self.log_start_offset = 0
        self.log_end_offset = self.high_watermark = 10

    def record_timestamp(self, offset: int) -> int | None:
        return estimate(self.header, offset)


class _Logs:
    def __init__(self, logs: dict[tuple[str, int], _Log]) -> None:
        self._logs = logs

    def served(self) -> Iterator[tuple[str, int, _Log]]:
        for (topic, partition), log in self._logs.items():
            yield topic, partition, log


class _Shard:
    def __init__(self) -> None:
        self.groups_offsets: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self.share_group_ids: list[str] = []

    def share_groups(self) -> list[ShareGroupView]:
        return [ShareGroupView(g, "Stable", 3, 4) for g in self.share_group_ids]

    def groups(self) -> Iterator[GroupView]:
        # As the shard does: a view per group, its offsets copied.
        for group_id, offsets in self.groups_offsets.items():
            yield GroupView(
                group_id,
                GroupState.STABLE,
                5,
                "consumer",
                "range",
                "m-1",
                (_MEMBER,),
                MappingProxyType(dict(offsets)),
            )


class _Coordinator:
    def __init__(self, shards: int) -> None:
        self.shards = [_Shard() for _ in range(shards)]
        self.load_times_ms = {p: 1.0 for p in range(shards)}

    def loaded_partitions(self) -> list[int]:
        return list(range(len(self.shards)))

    def shard(self, partition: int) -> _Shard:
        return self.shards[partition]


class _Topic:
    def __init__(self, name: str) -> None:
        self.name = name


class _Topics:
    def __init__(self, names: list[str]) -> None:
        self._by_id = {uuid.uuid5(uuid.NAMESPACE_DNS, n): _Topic(n) for n in names}

    def by_id(self, topic_id: uuid.UUID) -> _Topic | None:
        return self._by_id.get(topic_id)


class _State:
    """The parts of a broker a scrape reads."""

    def __init__(
        self, logs: _Logs, coordinator: _Coordinator, topics: _Topics, share: SharePartitionManager
    ) -> None:
        self.partitions = logs
        self.coordinator = coordinator
        self.topics = topics
        self.share_partitions = share
        self.clock = SystemClock()
        self.stats = BrokerStats()
        self.quotas = ClientQuotas(self.clock)
        self.client_telemetry = ClientTelemetry(self.clock, 1 << 20, None)


def _share_partitions(
    tps: list[tuple[str, int]], coordinator: _Coordinator, count: int, in_flight: int
) -> SharePartitionManager:
    """``count`` share partitions of 10 groups (at most 10 per topic partition),
    ``in_flight`` records each, every other one accepted (the others acquired,
    locked for an hour)."""
    manager = SharePartitionManager(SharePartitionConfig(record_lock_duration_ms=3_600_000), 10)
    now = SystemClock().now_ms()
    groups = [f"share-{g:02d}" for g in range(10)]
    for g, group in enumerate(groups):
        coordinator.shards[g % len(coordinator.shards)].share_group_ids.append(group)
    accepted = AcknowledgementBatch(
        0,
        in_flight - 1,
        tuple(AcknowledgeType.ACCEPT if o % 2 else AcknowledgeType.RENEW for o in range(in_flight)),
    )
    for i in range(count):
        topic, partition = tps[i % len(tps)]
        group = groups[i // len(tps) % len(groups)]
        key = (group, uuid.uuid5(uuid.NAMESPACE_DNS, topic), partition)
        sp = manager.get_or_create(key, lambda: 0)
        batches = [(b, b + 9) for b in range(0, in_flight, 10)]
        sp.acquire("member", batches, now, in_flight)
        sp.acknowledge("member", [accepted], now)
    return manager


def _walk(manager: SharePartitionManager) -> float:
    """Seconds to walk every in-flight record once, counting the acquired ones."""
    started = time.perf_counter()
    acquired = 0
    for _key, sp in manager.partitions():
        for batch in sp.batches():
            for first, last, delivery in batch.deliveries():
                if delivery.state is RecordState.ACQUIRED:
                    acquired += last - first + 1
    assert acquired == sum(sp.tally.acquired for _key, sp in manager.partitions())
    return time.perf_counter() - started


async def _http_get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    body = await reader.read()
    writer.close()
    return body


def _measure(metrics: BrokerMetrics, scrapes: int) -> dict[str, Any]:
    started = time.perf_counter()
    text = metrics.render()
    first = time.perf_counter() - started
    times = []
    for _ in range(scrapes):
        started = time.perf_counter()
        metrics.render()
        times.append(time.perf_counter() - started)
    return {
        "first_scrape_ms": round(first * 1000, 1),
        "scrape_ms_p50": round(statistics.median(times) * 1000, 1),
        "scrape_ms_max": round(max(times) * 1000, 1),
        "bytes": len(text),
        "samples": sum(1 for line in text.splitlines() if line and line[0] != "#"),
    }


def _chosen(tps: list[tuple[str, int]], group: int, count: int) -> dict[tuple[str, int], int]:
    """A group's committed offsets: half lagging (5 of 10 records left), half at the end."""
    chosen = [tps[(group * count + i) % len(tps)] for i in range(count)]
    return {tp: 5 if i % 2 else 10 for i, tp in enumerate(chosen)}


def run_state(args: argparse.Namespace) -> dict[str, object]:
    now = SystemClock().now_ms()
    batch = encode_batch([(None, b"v" * 100, (), now - 60_000 + i) for i in range(10)])
    names = [f"topic-{t:04d}" for t in range(args.topics)]
    tps = [(n, p) for n in names for p in range(args.partitions)]
    logs = _Logs({tp: _Log(batch) for tp in tps})
    coordinator = _Coordinator(50)
    for g in range(args.groups):
        offsets = {
            TopicPartition(*tp): CommittedOffset(o, -1, "", now)
            for tp, o in _chosen(tps, g, args.offsets_per_group).items()
        }
        coordinator.shards[g % 50].groups_offsets[f"group-{g:05d}"] = offsets
    share = _share_partitions(tps, coordinator, args.share_partitions, args.in_flight)
    metrics = BrokerMetrics(cast(Any, _State(logs, coordinator, _Topics(names), share)))
    return {
        "bench": "metrics_scrape",
        "state": "in memory",
        "partitions": len(tps),
        "groups": args.groups,
        "committed_offsets": args.groups * args.offsets_per_group,
        "share_partitions": args.share_partitions,
        "records_in_flight": sum(sp.in_flight_count() for _key, sp in share.partitions()),
        **_measure(metrics, args.scrapes),
        "share_walk_ms": round(_walk(share) * 1000, 1),
    }


async def run_real(args: argparse.Namespace) -> dict[str, object]:
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
                    broker.partitions.log(name, p).append(batch, now)
            tps = [(n, p) for n in names for p in range(args.partitions)]
            for g in range(args.groups):
                await admin.commit(f"group-{g:05d}", _chosen(tps, g, args.offsets_per_group))
            figures = _measure(BrokerMetrics(broker), args.scrapes)
            assert broker.metrics is not None
            started = time.perf_counter()
            body = await _http_get(broker.metrics.port)
            http = time.perf_counter() - started
            assert body.startswith(b"HTTP/1.1 200")
            return {
                "bench": "metrics_scrape",
                "state": "real broker",
                "partitions": len(tps),
                "groups": args.groups,
                "committed_offsets": args.groups * args.offsets_per_group,
                **figures,
                "http_scrape_ms": round(http * 1000, 1),
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
    ap.add_argument("--share-partitions", type=int, default=100)
    ap.add_argument("--in-flight", type=int, default=2000, help="records per share partition")
    ap.add_argument("--scrapes", type=int, default=10)
    ap.add_argument("--real", action="store_true", help="a real broker's state (see above)")
    args = ap.parse_args()
    print(json.dumps(asyncio.run(run_real(args)) if args.real else run_state(args)))


if __name__ == "__main__":
    main()
