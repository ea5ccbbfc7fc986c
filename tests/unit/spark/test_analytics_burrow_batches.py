"""Burrow's status rows of ``kgroups analytics`` do not depend on how the sorted
events are cut into Arrow batches, though commits that cannot reach a status
window are left out before they are read."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

import pyarrow as pa

from kgroups.spark.analytics.burrow import evaluate_sorted, needed_rows

WINDOW = 3


def _events(seed: int) -> pa.Table:
    """Sorted events of a few partitions: runs of commits, with ticks between."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for group in ("a", "b"):
        for partition in range(3):
            offset, t = 0, 0
            for _ in range(rng.randrange(0, 40)):
                t += rng.randrange(1, 5)
                if rng.random() < 0.2:
                    rows.append(_row(group, partition, t, 1, None, None, offset + rng.randrange(5)))
                else:
                    offset += rng.choice((0, 0, 1, 3, -1))
                    rows.append(_row(group, partition, t, 0, offset, rng.randrange(4), None))
    return pa.Table.from_pylist(rows)


def _row(
    group: str, partition: int, t: int, kind: int, offset: Any, lag: Any, log_end: Any
) -> dict[str, Any]:
    return {
        "group": group,
        "topic": "t",
        "partition": partition,
        "t_ms": t,
        "kind": kind,
        "offset": offset,
        "lag_offsets": lag,
        "log_end": log_end,
    }


def _status(events: pa.Table, sizes: list[int]) -> list[dict[str, Any]]:
    batches, at = [], 0
    for size in sizes:
        batches.append(events.slice(at, size).combine_chunks().to_batches()[0])
        at += size
    out: list[dict[str, Any]] = []
    for batch in evaluate_sorted(iter(batches), WINDOW):
        out += batch.to_pylist()
    return out


@pytest.mark.parametrize("seed", range(20))
def test_status_rows_are_the_same_however_the_events_are_batched(seed: int) -> None:
    events = _events(seed)
    n = events.num_rows
    if n == 0:
        return
    one_by_one = _status(events, [1] * n)  # every commit is kept: the reference
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, n), min(n - 1, 4))) if n > 1 else []
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    assert _status(events, [n]) == one_by_one
    assert _status(events, sizes) == one_by_one
    assert any(row["window_commits"] == WINDOW for row in one_by_one) or n < 10


def test_commits_far_from_any_tick_are_left_out() -> None:
    rows = [_row("a", 0, t, 0, t, 1, None) for t in range(100)]
    rows += [_row("a", 0, 100, 1, None, None, 200)]
    rows += [_row("b", 0, t, 0, t, 1, None) for t in range(100)]
    rows += [_row("c", 0, t, 0, t, 1, None) for t in range(100)]
    kept = needed_rows(pa.RecordBatch.from_pylist(rows), WINDOW).to_pylist()
    # a's last 3 commits and its tick; none of b's; c's last 3 (c may go on).
    assert kept == [97, 98, 99, 100, 298, 299, 300]


def test_a_consumer_caught_up_then_stopped_turns_stop() -> None:
    """Commits caught up with the log, then none while the log grows: OK while
    one of the last ``WINDOW`` ticks' log ends is at or below the last commit
    (Burrow's grace for a consumer caught up a moment ago), STOP after."""
    rows = [_row("a", 0, t, 0, 10 * t, 0, None) for t in (1, 2, 3)]
    rows.append(_row("a", 0, 3, 1, None, None, 30))
    rows += [_row("a", 0, t, 1, None, None, 10 * (t - 6)) for t in range(10, 14)]
    statuses = [
        (r["t_ms"], r["lag_offsets"], r["status"])
        for batch in evaluate_sorted(iter([pa.RecordBatch.from_pylist(rows)]), WINDOW)
        for r in batch.to_pylist()
    ]
    assert statuses == [
        (3, 0, "OK"),
        (10, 10, "OK"),
        (11, 20, "OK"),
        (12, 30, "STOP"),
        (13, 40, "STOP"),
    ]
