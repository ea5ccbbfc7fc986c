"""Cluster benchmarks: `kgroups serve` brokers on one PostgreSQL, each figure
beside a single local broker measured in the same run where one applies.

- durable_commits: 64 committers, each OffsetCommit of 10 partitions sent
  straight to its group's coordinator (found by FindCoordinator), with
  bench/offsets.py's load generator; on a single local broker with fsync on
  (log.flush.interval.messages=1), and on 1- and 3-broker clusters (every
  acknowledgement committed in PostgreSQL with fsync on);
- produce: confluent-kafka, acks=all, 200-byte records, linger.ms=5, 6
  partitions; MB/s on the same three;
- failover: kill -9 of a group's coordinator while a committer commits; the
  time from the kill to the first acknowledged commit of the moved group; then
  SIGTERM (controlled shutdown) of the new coordinator, same measure;
- coordinator_load: --records offset records of one group written into the
  store's `__consumer_offsets` partition of the group; time a broker takes to
  load them (from its log), beside a single local broker loading the same
  number from its local log (bench/offsets.py's).

Where the time goes: `broker_cpu_s` (all broker processes), `client_cpu_s`
(this process: the load generator, librdkafka's threads included),
`postgres_cpu_s` (all PostgreSQL processes), from /proc; `store_txns`
(transactions committed in the store, each one WAL flush, counted by
transaction ids).

Prints one JSON object per figure. Usage:

    .venv/bin/python bench/cluster.py [--seconds 3] [--records 1000000]
        [--heartbeat-ms 2000] [--session-ms 9000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from cluster_brokers import metadata, wait_for
from cluster_store import server_cpu, server_cpu_since
from heartbeats import cpu_seconds
from offsets import (
    OFFSETS_PARTITIONS,
    commit_errors,
    commit_frame,
    commit_loop,
    load_time,
    write_offsets_log,
)

from kgroups.client.admin import Admin
from kgroups.coordinator.records import (
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from kgroups.errors import KafkaError
from kgroups.postgres_store.local_server import LocalPostgres
from kgroups.records.batch import encode_batch
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group

from process_broker import BrokerProcess

LAYOUT = {"t": 10}
COMMITTERS = 64
RECORD = b"x" * 200


class Setup:
    """A single local broker or a cluster; started by `start`, always `stop`ped."""

    def __init__(
        self,
        name: str,
        brokers: list[BrokerProcess],
        pg: LocalPostgres | None,
        database: str = "kgroups",
    ) -> None:
        self.name, self.brokers, self.pg, self.database = name, brokers, pg, database

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self) -> Setup:
        for b in self.brokers:
            b.start()
        # Clients find the controller once every broker is in Metadata.
        wait_for(lambda: len(metadata(self.brokers[0].port).brokers) == len(self.brokers), 90)
        return self

    def stop(self) -> None:
        for b in self.brokers:
            b.stop()

    def usage(self) -> dict[str, Any]:
        """CPU so far of each broker and PostgreSQL process, and store commits."""
        brokers = {b.proc.pid: cpu_seconds(b.proc.pid) for b in self.brokers if b.proc}
        client = time.process_time()
        if self.pg is None or self.pg.pid is None:
            return {"brokers": brokers, "client": client}
        with psycopg.connect(self.pg.url(self.database), autocommit=True) as conn:
            # Every store transaction writes, so takes a transaction id: exact, unlike
            # pg_stat_database, whose counts reach the view up to seconds late.
            row = conn.execute(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"
            ).fetchone()
        assert row is not None
        return {"brokers": brokers, "client": client, "pg": server_cpu(self.pg.pid), "txns": row[0]}

    def used(self, before: dict[str, Any], elapsed: float) -> dict[str, Any]:
        after = self.usage()
        figures: dict[str, Any] = {
            "broker_cpu_s": round(
                sum(v - before["brokers"].get(pid, 0.0) for pid, v in after["brokers"].items()), 2
            ),
            "client_cpu_s": round(after["client"] - before["client"], 2),
            "elapsed_s": round(elapsed, 2),
        }
        if self.pg is not None and self.pg.pid is not None:
            figures["postgres_cpu_s"] = round(server_cpu_since(self.pg.pid, before["pg"]), 2)
            # Heartbeats' lease renewals included (one per broker and interval).
            figures["store_txns"] = after["txns"] - before["txns"] - 1
        return figures


def cluster(
    data: Path, pg: LocalPostgres, count: int, *overrides: str, database: str = "kgroups"
) -> Setup:
    url = pg.url(database)
    data.mkdir(parents=True, exist_ok=True)
    brokers = [
        BrokerProcess(
            data / f"c{count}-b{i}",
            None,
            f"cluster.store.url={url}",
            f"broker.id={i}",
            *overrides,
        )
        for i in range(1, count + 1)
    ]
    return Setup(f"{count}-broker cluster", brokers, pg, database)


async def until(step: Any, timeout: float = 60) -> Any:
    """``await step()`` until it does not raise a Kafka or connection error."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await step()
        except (KafkaError, OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def coordinators(bootstrap: str, groups: Sequence[str]) -> dict[str, tuple[str, int]]:
    async def find() -> dict[str, tuple[str, int]]:
        admin = Admin(bootstrap)
        try:
            found = await admin.find_coordinators(groups)
        finally:
            await admin.close()
        result = {}
        for group, c in found.items():
            if isinstance(c, KafkaError):
                raise c
            result[group] = (c[1], c[2])
        return result

    return await until(find)  # type: ignore[no-any-return]


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    await asyncio.sleep(0.5)  # every broker's view catches up


async def spread_commits(setup: Setup, seconds: float) -> dict[str, Any]:
    """bench/offsets.py's durable commits, each group at its own coordinator."""
    groups = [f"c{i}" for i in range(COMMITTERS)]
    where = await coordinators(setup.bootstrap, groups)

    async def first(group: str) -> None:  # creates the group; the coordinator may be loading
        while True:
            reader, writer = await asyncio.open_connection(*where[group])
            try:
                writer.write(commit_frame(group, 0, LAYOUT))
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                if not any(commit_errors(await reader.readexactly(size))):
                    return
            finally:
                writer.close()
            await asyncio.sleep(0.1)
            # A broker that lost its lease on a busy machine gave its groups away.
            where[group] = (await coordinators(setup.bootstrap, [group]))[group]

    await asyncio.gather(*(first(g) for g in groups))
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    before = setup.usage()
    started = time.perf_counter()
    await asyncio.gather(
        *(
            commit_loop(commit_frame(g, i + 1, LAYOUT), where[g], deadline, latencies)
            for i, g in enumerate(groups)
        )
    )
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "commits_per_s": round(len(latencies) / elapsed),
        "partition_offsets_per_s": round(10 * len(latencies) / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
        "coordinators": len(set(where.values())),
        **setup.used(before, elapsed),
    }


def produce(setup: Setup, records: int) -> dict[str, Any]:
    from confluent_kafka import Producer

    failed: list[object] = []
    producer = Producer(
        {
            "bootstrap.servers": setup.bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    before = setup.usage()
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(
                    "p", RECORD, partition=i % 6, on_delivery=lambda e, _m: e and failed.append(e)
                )
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0 and not failed, failed[:3]
    elapsed = time.perf_counter() - started
    return {
        "mb_per_s": round(records * len(RECORD) / elapsed / 1e6, 1),
        "records": records,
        **setup.used(before, elapsed),
    }


async def throughput(setup: Setup, args: argparse.Namespace) -> None:
    await create_topic(setup.bootstrap, "t", 10)
    await create_topic(setup.bootstrap, "p", 6)
    commits = await spread_commits(setup, args.seconds)
    print(json.dumps({"bench": "durable_commits", "on": setup.name, **commits}), flush=True)
    produced = produce(setup, args.produce_records)
    print(json.dumps({"bench": "produce", "on": setup.name, **produced}), flush=True)


class Committer:
    """Commits for one group, one at a time, through any broker; the times of
    its acknowledged commits."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.bootstrap, self.group = bootstrap, group
        self.acked: list[float] = []
        self.done = False

    async def run(self) -> None:
        admin = Admin(self.bootstrap)
        offset = 0
        while not self.done:
            offset += 1
            try:
                await asyncio.wait_for(admin.commit(self.group, {("t", 0): offset}), 5)
                self.acked.append(time.monotonic())
            except (KafkaError, OSError, TimeoutError):
                await admin.close()
                admin = Admin(self.bootstrap)
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.005)
        await admin.close()

    async def first_ack_after(self, instant: float, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while not any(t > instant for t in self.acked):
            assert time.monotonic() < deadline, "no commit acknowledged after the move"
            await asyncio.sleep(0.01)
        return next(t for t in self.acked if t > instant) - instant


async def failover(setup: Setup, args: argparse.Namespace) -> None:
    group = "moving"
    await create_topic(setup.bootstrap, "t", 10)
    committer = Committer(setup.bootstrap, group)
    task = asyncio.create_task(committer.run())
    try:
        for signal_name in ("SIGKILL", "SIGTERM"):
            await asyncio.sleep(2)  # steady commits first
            where = await coordinators(setup.bootstrap, [group])
            victim = next(b for b in setup.brokers if b.port == where[group][1])
            assert victim.proc is not None
            moved_at = time.monotonic()
            if signal_name == "SIGKILL":
                victim.kill()
            else:
                victim.proc.terminate()
            seconds = await committer.first_ack_after(moved_at)
            if signal_name == "SIGTERM":
                victim.proc.wait(30)
            goal = args.session_ms / 1000 + 2 if signal_name == "SIGKILL" else 2.0
            print(
                json.dumps(
                    {
                        "bench": "failover",
                        "on": setup.name,
                        "signal": signal_name,
                        "seconds_to_first_commit": round(seconds, 2),
                        "goal_s": goal,
                        "heartbeat_ms": args.heartbeat_ms,
                        "session_ms": args.session_ms,
                    }
                ),
                flush=True,
            )
    finally:
        committer.done = True
        await task


def store_offsets(url: str, group: str, records: int) -> None:
    """Append `records` commits of `group` to its `__consumer_offsets` partition
    in the store, in batches of 1000, as a leader would have."""
    partition = partition_for_group(group, OFFSETS_PARTITIONS)
    now = int(time.time() * 1000)
    with psycopg.connect(url) as conn:
        row = conn.execute(
            """SELECT p.topic_id, p.next_offset, p.leader_epoch FROM kgroups_partitions p
               JOIN kgroups_topics t USING (topic_id) WHERE t.name = %s AND p.partition = %s""",
            (OFFSETS_TOPIC, partition),
        ).fetchone()
        assert row is not None
        topic_id, offset, epoch = row
        rows = []
        for start in range(0, records, 1000):
            batch = [
                (
                    encode_offset_commit_key(group, "t", i % 10),
                    encode_offset_commit_value(OffsetCommitValue(i, "", now)),
                    (),
                    now,
                )
                for i in range(start, min(start + 1000, records))
            ]
            encoded = bytearray(encode_batch(batch, base_offset=offset))
            encoded[12:16] = struct.pack(">i", epoch)  # partition leader epoch
            rows.append((topic_id, partition, offset, offset + len(batch) - 1, now, bytes(encoded)))
            offset += len(batch)
        with conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO kgroups_batches
                   (topic_id, partition, base_offset, last_offset, max_timestamp, batch)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                rows,
            )
            cur.execute(
                "UPDATE kgroups_partitions SET next_offset = %s WHERE topic_id = %s"
                " AND partition = %s",
                (offset, topic_id, partition),
            )


def logged_load_seconds(broker: BrokerProcess) -> float | None:
    logged = [
        float(line.rsplit(" in ", 1)[1].split()[0])
        for line in broker.log_path.read_text().splitlines()
        if f"loaded {OFFSETS_TOPIC}" in line
    ]
    return max(logged) if logged else None


async def coordinator_load(data: Path, pg: LocalPostgres, records: int) -> None:
    # The single local broker: bench/offsets.py's own measure.
    local_data = data / "load-local"
    local_data.mkdir(parents=True)
    broker = BrokerProcess(local_data)
    broker.start()
    broker.stop()
    registry = json.loads((local_data / "kgroups-topics.json").read_text())
    registry["topics"].append(
        {
            "name": OFFSETS_TOPIC,
            "id": "00000000-0000-0000-0000-0000000000aa",
            "partitions": OFFSETS_PARTITIONS,
            "configs": {"cleanup.policy": "compact"},
        }
    )
    (local_data / "kgroups-topics.json").write_text(json.dumps(registry))
    write_offsets_log(local_data, "loaded", records, 10)
    try:
        await load_time(broker, "loaded")
        local_seconds = logged_load_seconds(broker)
    finally:
        broker.stop()

    # A 1-broker cluster: the group's first commit makes the topic; stop; add records; start.
    setup = cluster(data / "load", pg, 1).start()
    try:
        await create_topic(setup.bootstrap, "t", 10)

        async def first() -> None:
            admin = Admin(setup.bootstrap)
            try:
                await admin.commit("loaded", {("t", 0): 0})
            finally:
                await admin.close()

        await until(first)
    finally:
        (only,) = setup.brokers
        assert only.proc is not None
        only.proc.terminate()
        only.proc.wait(30)
    store_offsets(pg.url("kgroups"), "loaded", records)
    started = time.perf_counter()
    try:
        await load_time(only, "loaded")
        seconds = time.perf_counter() - started
        cluster_seconds = logged_load_seconds(only)
    finally:
        only.stop()
    print(
        json.dumps(
            {
                "bench": "coordinator_load",
                "records": records,
                "live_keys": 10,
                "on": "1-broker cluster",
                "load_seconds": cluster_seconds,
                "seconds_from_process_start": round(seconds, 2),
                "seconds_per_million": round(cluster_seconds * 1e6 / records, 2)
                if cluster_seconds
                else None,
                "single_local_broker": {
                    "load_seconds": local_seconds,
                    "seconds_per_million": round(local_seconds * 1e6 / records, 2)
                    if local_seconds
                    else None,
                },
            }
        ),
        flush=True,
    )


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    data.mkdir(parents=True)
    try:
        with LocalPostgres() as pg:  # fsync on, synchronous commit
            await phases(args, data, pg)
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)


async def phases(args: argparse.Namespace, data: Path, pg: LocalPostgres) -> None:
    lease = [f"broker.heartbeat.interval.ms={args.heartbeat_ms}"]
    lease += [f"broker.session.timeout.ms={args.session_ms}"]
    for only in args.only or ["throughput", "failover", "load"]:
        if only == "throughput":
            # The local broker fsyncs every `__consumer_offsets` append, as the store does.
            flush = "log.flush.interval.messages=1"
            single = Setup(
                "single local broker", [BrokerProcess(data / "local", None, flush)], None
            ).start()
            try:
                await throughput(single, args)
            finally:
                single.stop()
            for count in (1, 3):
                pg.create_database("kgroups")
                setup = cluster(data, pg, count, *lease).start()
                try:
                    await throughput(setup, args)
                finally:
                    setup.stop()
                _drop(pg)
        elif only == "failover":
            pg.create_database("kgroups")
            setup = cluster(data / "failover", pg, 3, *lease).start()
            try:
                await failover(setup, args)
            finally:
                setup.stop()
            _drop(pg)
        elif only == "load":
            pg.create_database("kgroups")
            await coordinator_load(data, pg, args.records)
            _drop(pg)


def _drop(pg: LocalPostgres) -> None:
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS "kgroups" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--produce-records", type=int, default=500_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--heartbeat-ms", type=int, default=2000)
    ap.add_argument("--session-ms", type=int, default=9000)
    ap.add_argument(
        "--only", action="append", choices=["throughput", "failover", "load"], help="repeatable"
    )
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
