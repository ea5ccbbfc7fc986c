"""Offset benchmarks against a `kgroups serve` subprocess.

- durable commits: concurrent committers, each commit 10 partitions, with fsync
  on (log.flush.interval.messages=1, so every append of `__consumer_offsets` is
  fsynced; concurrent commits share fsyncs); partition-offsets/s, p50/p99;
- OffsetFetch latency (one group, 10 partitions);
- coordinator load: a `__consumer_offsets` partition holding N offset records
  (written straight into the data directory), timed from broker start until the
  group's offsets can be fetched.

Prints one JSON object per figure. Usage:

    .venv/bin/python bench/offsets.py [--records 1000000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

from kio.index import load_request_schema
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.serial import entity_writer

from kgroups.client.admin import Admin
from kgroups.cluster.placement import OFFSETS_TOPIC, partition_for_group
from kgroups.coordinator.records import (
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.errors import KafkaError
from kgroups.protocol.types import GroupId, TopicName, i32, i64
from kgroups.storage.config import LogConfig
from kgroups.storage.log import PartitionLog
from kgroups.storage.records import encode_batch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from process_broker import BrokerProcess

OFFSETS_PARTITIONS = 5


def commit_frame(group: str, offset: int) -> bytes:
    """A standalone OffsetCommit v9 of 10 partitions, encoded once: the load
    generator then costs little next to the broker it measures."""
    request = OffsetCommitRequest(
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name=TopicName("t"),
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=i32(p),
                        committed_offset=i64(offset),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    )
                    for p in range(10)
                ),
            ),
        ),
    )
    body = io.BytesIO()
    entity_writer(load_request_schema(8, 9))(body, request)
    payload = struct.pack(">hhih", 8, 9, 1, 2) + b"oc" + b"\x00" + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


async def durable_commits(bootstrap: str, seconds: float, committers: int) -> dict[str, object]:
    admin = Admin(bootstrap)
    for i in range(committers):  # create the groups and learn their coordinator
        await admin.commit(f"c{i}", {("t", p): 0 for p in range(10)})
    await admin.close()
    host, port = bootstrap.split(":")
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        frame = commit_frame(f"c{i}", i + 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                writer.write(frame)
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                response = await reader.readexactly(size)
                # correlation id, tagged fields, throttle, topics (1), name, partitions (10)...
                assert response.count(b"\x00\x00") >= 10
                latencies.append(time.perf_counter() - started)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(committers)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "bench": "durable_commits",
        "committers": committers,
        "commits_per_s": round(len(latencies) / elapsed),
        "partition_offsets_per_s": round(10 * len(latencies) / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
    }


async def offset_fetch_latency(bootstrap: str, count: int) -> dict[str, object]:
    admin = Admin(bootstrap)
    await admin.coordinator("c0")
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        await admin.committed("c0")
        latencies.append(time.perf_counter() - started)
    await admin.close()
    latencies.sort()
    return {
        "bench": "offset_fetch",
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
    }


def write_offsets_log(data: Path, group: str, records: int, keys: int) -> None:
    """A `__consumer_offsets` partition with `records` commits over `keys` partitions."""
    partition = partition_for_group(group, OFFSETS_PARTITIONS)
    log = PartitionLog.open(
        data / f"{OFFSETS_TOPIC}-{partition}",
        LogConfig(cleanup_policy="compact", segment_bytes=100 * 1024 * 1024),
        0,
    )
    now = int(time.time() * 1000)
    batch: list[tuple[bytes, bytes | None, tuple[()], int]] = []
    for i in range(records):
        key = encode_offset_commit_key(group, "t", i % keys)
        value = encode_offset_commit_value(OffsetCommitValue(i, "", now))
        batch.append((key, value, (), now))
        if len(batch) == 1000:
            log.append_batch(encode_batch(batch), now)
            batch = []
    if batch:
        log.append_batch(encode_batch(batch), now)
    log.close()


async def load_time(broker: BrokerProcess, group: str) -> float:
    started = time.perf_counter()
    broker.start()
    admin = Admin(broker.bootstrap)
    try:
        while True:
            try:
                if await admin.committed(group):
                    return time.perf_counter() - started
            except KafkaError:
                await asyncio.sleep(0.01)
    finally:
        await admin.close()


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    # With fsync on, every append of `__consumer_offsets` is fsynced (group commit).
    flush = ["log.flush.interval.messages=1"] if args.fsync else []
    broker = BrokerProcess(data, None, *flush).start()
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("t", 10, 1)])["t"].result(20)
        for committers in (1, 64):
            figures = await durable_commits(broker.bootstrap, args.seconds, committers)
            print(json.dumps({**figures, "fsync": args.fsync}))
        print(json.dumps(await offset_fetch_latency(broker.bootstrap, 2000)))
    finally:
        broker.stop()

    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    data.mkdir(parents=True)
    broker = BrokerProcess(data)
    broker.start()  # creates the topic registry; then add the offsets topic by hand
    broker.stop()
    registry = json.loads((data / "kgroups-topics.json").read_text())
    registry["topics"].append(
        {
            "name": OFFSETS_TOPIC,
            "id": "00000000-0000-0000-0000-0000000000aa",
            "partitions": OFFSETS_PARTITIONS,
            "configs": {"cleanup.policy": "compact"},
        }
    )
    (data / "kgroups-topics.json").write_text(json.dumps(registry))
    write_offsets_log(data, "loaded", args.records, 10)
    try:
        seconds = await load_time(broker, "loaded")
        # The broker logs its own load time, without process start-up.
        logged = [
            float(line.rsplit(" in ", 1)[1].split()[0])
            for line in broker.log_path.read_text().splitlines()
            if "loaded __consumer_offsets" in line
        ]
        print(
            json.dumps(
                {
                    "bench": "coordinator_load",
                    "records": args.records,
                    "live_keys": 10,
                    "seconds_from_process_start": round(seconds, 3),
                    "load_seconds": logged[0] if logged else None,
                    "records_per_s": round(args.records / logged[0]) if logged else None,
                }
            )
        )
    finally:
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument(
        "--no-fsync",
        dest="fsync",
        action="store_false",
        help="Kafka's default flush policy: commits are durable in the page cache",
    )
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
