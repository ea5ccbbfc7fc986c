"""bench/cluster.py's throughput figures, the three setups measured in turn.

On a machine shared with other work, figures measured one setup after the
other compare different moments of that machine. Here the single local broker
(fsync on), the 1-broker and the 3-broker cluster (on one PostgreSQL, a
database each) are all started first, then measured in turn, round after
round, each round in another order: every ratio to the single broker comes
from the same round. A setup waiting for its turn costs next to nothing (its
lease renewals: one store transaction per broker and heartbeat interval).

Per round and setup, as bench/cluster.py: durable_commits (64 committers x 10
partitions) and produce (confluent-kafka, acks=all, 200-byte records). Then
one summary line per figure: each cluster's ratio to the single broker, per
round and median, and its figure per CPU-second (brokers, PostgreSQL and this
process: the load generator), the efficiency a machine's cores would see;
then where that CPU went (median over the rounds): µs per durable commit, or
seconds per 100 MB produced, of the brokers, PostgreSQL and the load
generator, and the commits per store transaction (each a WAL flush) or the
store transactions per 100 MB.

With --compare-src DIR, a second 3-broker cluster, whose brokers run the
kgroups package found in DIR, on a PostgreSQL of its own, is measured in
the same rounds: an A/B of two versions of the code under the same load, e.g.

    git archive d2244d6 src | tar -x -C /tmp/before
    .venv/bin/python bench/cluster_rounds.py --compare-src /tmp/before/src

Usage:

    .venv/bin/python bench/cluster_rounds.py [--rounds 3] [--seconds 3]
        [--produce-records 500000] [--compare-src DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import Setup, cluster, create_topic, produce, spread_commits

from kgroups.postgres_store.local_server import LocalPostgres

from process_broker import BrokerProcess

FIGURES = {"durable_commits": "partition_offsets_per_s", "produce": "mb_per_s"}


class FromSource(Setup):
    """A setup whose broker processes run the kgroups package in ``src``."""

    def __init__(self, inner: Setup, src: Path) -> None:
        super().__init__(f"{inner.name} ({src})", inner.brokers, inner.pg, inner.database)
        self.src = src

    def start(self) -> Setup:
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([str(self.src), *([before] if before else [])])
        try:
            return super().start()
        finally:
            if before is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = before


async def rounds(
    args: argparse.Namespace, data: Path, pg: LocalPostgres, other: LocalPostgres | None
) -> None:
    lease = [f"broker.heartbeat.interval.ms={args.heartbeat_ms}"]
    lease += [f"broker.session.timeout.ms={args.session_ms}"]
    flush = "log.flush.interval.messages=1"  # the local broker fsyncs every offsets append
    setups = [Setup("single local broker", [BrokerProcess(data / "local", None, flush)], None)]
    for count in (1, 3):
        database = f"kgroups{count}"
        pg.create_database(database)
        setups.append(cluster(data / database, pg, count, *lease, database=database))
    if other is not None:
        other.create_database("compared")
        compared = cluster(data / "compared", other, 3, *lease, database="compared")
        setups.append(FromSource(compared, args.compare_src))
    started: list[Setup] = []
    try:
        for setup in setups:
            started.append(setup.start())
            await create_topic(setup.bootstrap, "t", 10)
            await create_topic(setup.bootstrap, "p", 6)
        results: list[dict[str, Any]] = []
        for r in range(args.rounds):
            shift = r % len(setups)
            for setup in setups[shift:] + setups[:shift]:
                where = {"on": setup.name, "round": r}
                commits = await spread_commits(setup, args.seconds)
                results.append({"bench": "durable_commits", **where, **commits})
                print(json.dumps(results[-1]), flush=True)
                produced = produce(setup, args.produce_records)
                results.append({"bench": "produce", **where, **produced})
                print(json.dumps(results[-1]), flush=True)
        for bench, key in FIGURES.items():
            print(json.dumps(summary(results, bench, key, [s.name for s in setups])), flush=True)
    finally:
        for setup in started:
            setup.stop()


def summary(
    results: list[dict[str, Any]], bench: str, key: str, names: list[str]
) -> dict[str, Any]:
    def figure(name: str, r: int) -> dict[str, Any]:
        return next(x for x in results if (x["bench"], x["on"], x["round"]) == (bench, name, r))

    anchor, out = names[0], {"bench": bench, "summary": key}
    count = 1 + max(x["round"] for x in results)
    for name in names:
        values = [figure(name, r)[key] for r in range(count)]
        cpu = [
            figure(name, r)["broker_cpu_s"]
            + figure(name, r).get("postgres_cpu_s", 0.0)
            + figure(name, r)["client_cpu_s"]
            for r in range(count)
        ]
        per_cpu = [
            v * figure(name, r)["elapsed_s"] / c
            for r, (v, c) in enumerate(zip(values, cpu, strict=True))
        ]
        entry: dict[str, Any] = {
            "values": values,
            "per_cpu_second": round(statistics.median(per_cpu), 1),
            "cpu_per_unit": cpu_per_unit(bench, [figure(name, r) for r in range(count)]),
        }
        if name != anchor:
            ratios = [v / figure(anchor, r)[key] for r, v in enumerate(values)]
            entry["ratio_to_single"] = [round(x, 2) for x in ratios]
            entry["median_ratio"] = round(statistics.median(ratios), 2)
        out[name] = entry
    return out


def cpu_per_unit(bench: str, rounds: list[dict[str, Any]]) -> dict[str, float]:
    """Median CPU per commit (µs) or per 100 MB (s) of each kind of process,
    and store transactions per commit or per 100 MB."""

    def units(x: dict[str, Any]) -> float:
        if bench == "durable_commits":
            return float(x["commits_per_s"] * x["elapsed_s"]) / 1e6  # per µs
        return float(x["records"]) * 200 / 1e8

    keys = {
        "broker": "broker_cpu_s",
        "postgres": "postgres_cpu_s",
        "load_generator": "client_cpu_s",
    }
    out = {
        name: round(statistics.median(x.get(key, 0.0) / units(x) for x in rounds), 2)
        for name, key in keys.items()
    }
    if all("store_txns" in x for x in rounds):
        if bench == "durable_commits":  # how many commits shared a WAL flush
            shared = (x["commits_per_s"] * x["elapsed_s"] / x["store_txns"] for x in rounds)
            out["commits_per_store_txn"] = round(statistics.median(shared), 1)
        else:
            per_100mb = (x["store_txns"] / units(x) for x in rounds)
            out["store_txns_per_100mb"] = round(statistics.median(per_100mb))
    return out


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    data.mkdir(parents=True)
    try:
        with contextlib.ExitStack() as stack:  # fsync on, synchronous commit
            pg = stack.enter_context(LocalPostgres())
            other = None if args.compare_src is None else stack.enter_context(LocalPostgres())
            await rounds(args, data, pg, other)
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--produce-records", type=int, default=500_000)
    ap.add_argument("--heartbeat-ms", type=int, default=2000)
    ap.add_argument("--session-ms", type=int, default=9000)
    ap.add_argument("--compare-src", type=Path, help="another kgroups source tree's src/")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
