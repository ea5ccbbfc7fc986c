"""A long randomized fault run (tests/faults/): three `kgroups serve`
brokers on a throwaway PostgreSQL, idempotent producers, consumer groups of
both protocols, a read_committed reader, a consume-transform-produce loop in
transactions, while the nemesis kills, pauses and cuts brokers; then the
checker goes over the history (exactly-once and progress after the heal
included).

Prints the faults injected, the operations checked and every anomaly (the
goal is none), then one JSON object of the figures. The same seed gives the
same faults at the same instants. Exit status 1 when anomalies were found.

    .venv/bin/python bench/faults.py --minutes 30 --seed 7 [--data-dir DIR] [--ha]

With ``--ha`` the store is etcd and two PostgreSQL under Patroni with
synchronous replication (Debian's packages, ``make store-ha``), and the
nemesis also fails the store's primary over (SIGKILL of its PostgreSQL).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from faults.ha_store import PatroniStore
from faults.nemesis import KINDS
from faults.run import run

from kgroups.postgres_store.local_patroni import LocalPatroni
from kgroups.postgres_store.local_server import LocalPostgres


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2, help="faults held at once, at most")
    parser.add_argument("--kinds", default=",".join(KINDS), help="fault kinds, comma-separated")
    parser.add_argument("--data-dir", type=Path, help="keep logs and history here")
    parser.add_argument("--ha", action="store_true", help="the store under Patroni, failed over")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="kgroups-faults-"))
    data.mkdir(parents=True, exist_ok=True)
    print(f"seed {seed}, data in {data}", flush=True)
    with LocalPatroni(fsync=False) if args.ha else LocalPostgres(fsync=False) as server:
        ha_store = PatroniStore(server, "faults") if isinstance(server, LocalPatroni) else None
        store_url = ha_store.url if ha_store else server.create_database("faults")
        report = run(
            data,
            store_url,
            seed,
            args.minutes * 60,
            brokers=args.brokers,
            kinds=tuple(args.kinds.split(",")),
            concurrency=args.concurrency,
            ha_store=ha_store,
        )
    print(report.summary())
    print(
        json.dumps(
            {
                "seed": seed,
                "minutes": args.minutes,
                "seconds": round(report.seconds),
                "faults_injected": report.injected,
                "faults_skipped": report.skipped,
                "operations": report.ops,
                "checked": dict(report.result.checked),
                "anomalies": len(report.result.anomalies),
                "noted": dict(report.notes),
            }
        )
    )
    if report.result.valid and args.data_dir is None:
        shutil.rmtree(data, ignore_errors=True)
    return 0 if report.result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
