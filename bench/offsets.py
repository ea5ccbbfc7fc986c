"""Offset benchmarks against a `kgroups serve` subprocess.

- durable commits: concurrent committers, each commit 10 partitions, with fsync
  on (log.flush.interval.messages=1, so every append of `__consumer_offsets` is
  fsynced; concurrent commits share fsyncs); partition-offsets/s, p50/p99;
- OffsetFetch latency (one group, 10 partitions);
- coordinator load: a `__consumer_offsets` partition holding N offset records
  (written straight into the data directory), timed from broker start until the
  group's offsets can be fetched.

`--mock` also runs the durable commits against librdkafka's in-memory mock
cluster (bench/mock_cluster.py) in the same run, and adds its figures and the
ratio kgroups / mock to each durable_commits line. The mock keeps offsets in
memory only, while kgroups appends them to `__consumer_offsets` (and fsyncs
them, unless --no-fsync). The mock's topics have 4 partitions, so there each
commit names three topics (4 + 4 + 2 partitions), for both servers. The
coordinator load figure is left out then. `server_cpu_us_per_commit` is the
server process's CPU time per commit, from /proc.

Prints one JSON object per figure. Usage:

    .venv/bin/python bench/offsets.py [--records 1000000] [--seconds 5] [--no-fsync] [--mock]
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
from kgroups.coordinator.records import (
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.errors import KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.protocol.types import GroupId, TopicName, i32, i64
from kgroups.records.batch import encode_batch
from kgroups.storage.log import SegmentLog
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from heartbeats import cpu_seconds
from mock_cluster import MockCluster

from process_broker import BrokerProcess

OFFSETS_PARTITIONS = 5


# The 10 partitions of each commit, by topic: one topic of 10 partitions, or,
# when compared with librdkafka's mock (whose topics have 4 partitions), three.
ONE_TOPIC = {"t": 10}
MOCK_TOPICS = {"t0": 4, "t1": 4, "t2": 2}


def commit_frame(group: str, offset: int, layout: dict[str, int]) -> bytes:
    """A standalone OffsetCommit v9 of 10 partitions, encoded once: the load
    generator then costs little next to the broker it measures."""
    request = OffsetCommitRequest(
        group_id=GroupId(group),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=i32(p),
                        committed_offset=i64(offset),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    )
                    for p in range(count)
                ),
            )
            for topic, count in layout.items()
        ),
    )
    body = io.BytesIO()
    entity_writer(load_request_schema(8, 9))(body, request)
    payload = struct.pack(">hhih", 8, 9, 1, 2) + b"oc" + b"\x00" + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def commit_errors(response: bytes) -> list[int]:
    """The partition error codes of an OffsetCommit v9 response (after the size)."""
    errors = []
    pos = 4 + 1 + 4  # correlation id, header tagged fields, throttle time
    topics, pos = response[pos] - 1, pos + 1  # compact arrays below 127 entries
    for _ in range(topics):
        pos += response[pos]  # compact name: its length + 1, then the name
        partitions, pos = response[pos] - 1, pos + 1
        for _ in range(partitions):
            errors.append(struct.unpack_from(">h", response, pos + 4)[0])
            pos += 4 + 2 + 1  # index, error code, tagged fields
        pos += 1
    return errors


async def commit_loop(
    frame: bytes, address: tuple[str, int], deadline: float, latencies: list[float]
) -> None:
    """One committer: the same 10-partition commit back to back on its own
    connection until ``deadline``, each answer checked, each latency kept."""
    reader, writer = await asyncio.open_connection(*address)
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(frame)
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            errors = commit_errors(await reader.readexactly(size))
            assert len(errors) == 10 and not any(errors), errors
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()


async def durable_commits(
    bootstrap: str,
    seconds: float,
    committers: int,
    layout: dict[str, int],
    cpu_pid: int | None = None,
) -> dict[str, object]:
    """Commits back to back on one connection per committer; figures over
    `seconds`. `cpu_pid`: the server process, for its CPU time per commit."""
    host, port = bootstrap.split(":")
    for i in range(committers):  # create the groups: a first commit each
        reader, writer = await asyncio.open_connection(host, int(port))
        while True:
            writer.write(commit_frame(f"c{i}", 0, layout))
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            if not any(commit_errors(await reader.readexactly(size))):
                break
            await asyncio.sleep(0.1)  # the coordinator is still loading
        writer.close()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    address = (host, int(port))
    cpu_before = cpu_seconds(cpu_pid)
    started = time.perf_counter()
    await asyncio.gather(
        *(
            commit_loop(commit_frame(f"c{i}", i + 1, layout), address, deadline, latencies)
            for i in range(committers)
        )
    )
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(cpu_pid) - cpu_before
    latencies.sort()
    figures: dict[str, object] = {
        "bench": "durable_commits",
        "committers": committers,
        "commits_per_s": round(len(latencies) / elapsed),
        "partition_offsets_per_s": round(10 * len(latencies) / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
    }
    if cpu_pid is not None:
        figures["server_cpu_us_per_commit"] = round(cpu * 1e6 / len(latencies), 1)
    return figures


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
    log = SegmentLog.open(
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
    assert broker.proc is not None
    layout = MOCK_TOPICS if args.mock else ONE_TOPIC
    mock = MockCluster().start(tuple(layout)) if args.mock else None
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for topic, partitions in layout.items():
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)
        kgroups_admin = Admin(broker.bootstrap)
        await kgroups_admin.coordinator("c0")  # creates `__consumer_offsets`
        await kgroups_admin.close()
        for committers in (1, 64):
            figures = await durable_commits(
                broker.bootstrap, args.seconds, committers, layout, broker.proc.pid
            )
            figures = {**figures, "fsync": args.fsync}
            if mock is not None:
                theirs = await durable_commits(
                    mock.bootstrap, args.seconds, committers, layout, mock.pid
                )
                ours, mocks = figures["partition_offsets_per_s"], theirs["partition_offsets_per_s"]
                assert isinstance(ours, int) and isinstance(mocks, int)
                figures["topics"] = layout
                figures["mock"] = {
                    k: v for k, v in theirs.items() if k.endswith(("_s", "_ms", "_commit"))
                }
                figures["ratio_kgroups_to_mock"] = {
                    "partition_offsets_per_s": round(ours / mocks, 3)
                }
            print(json.dumps(figures))
        print(json.dumps(await offset_fetch_latency(broker.bootstrap, 2000)))
    finally:
        broker.stop()
        if mock is not None:
            mock.stop()
    if args.mock:
        return  # the coordinator load has nothing to compare with

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
    ap.add_argument(
        "--mock",
        action="store_true",
        help="run the same commit load against librdkafka's mock cluster, in memory, "
        "and print the ratio (commits spread over three topics of 4 partitions)",
    )
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
