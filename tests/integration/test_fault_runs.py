"""A short randomized fault run (see tests/faults/): three brokers on one
PostgreSQL, idempotent producers, consumer groups of both protocols, a
read_committed reader and a consume-transform-produce loop in transactions,
while brokers are killed, paused and cut off from the store or from their
clients; then the history is checked, progress after the heal included. The seed is
printed on failure; `KGROUPS_FAULT_SEED=N` replays its faults here, as does
`bench/faults.py --seed N --minutes 0.75` (the schedule depends on the seed
and the length)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from faults.run import run

SECONDS = 45


def test_a_short_fault_run_finds_no_anomaly(tmp_path: Path, store_url: str) -> None:
    seed = int(os.environ.get("KGROUPS_FAULT_SEED", random.randrange(1 << 32)))
    report = run(tmp_path, store_url, seed, SECONDS)
    print(report.summary())
    assert report.injected > 0, report.summary()
    assert report.result.checked["acknowledged"] > 0, report.summary()
    assert report.result.valid, report.summary()
