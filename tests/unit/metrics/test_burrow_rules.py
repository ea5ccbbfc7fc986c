"""Burrow 1.x's partition status rules, on the cases its evaluator is tested with:
each case's window, recent log ends, current lag and evaluation time, the answer
of every rule and the resulting status."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from kgroups.metrics.burrow import (
    Commit,
    group_status,
    lag_always_above,
    lag_not_decreasing,
    offsets_stalled,
    offsets_stopped,
    partition_status,
    recent_lag_zero,
    rewind_index,
)


class Case(NamedTuple):
    why: str
    offsets: list[int]
    lags: list[int | None]
    times_s: list[int]
    broker_offsets: list[int]
    current_lag: int
    now_s: int
    allowed_lag: int
    always_lagging: bool
    rewind_at: int
    stopped: bool
    stalled: bool
    lag_not_decreasing: bool
    recently_caught_up: bool
    status: str


HUNDREDS = [100, 200, 300, 400, 500]
STEPS = [1000, 2000, 3000, 4000, 5000]
# 15 commits a second apart, each caught up when it was made.
BUSY_OFFSETS = list(range(792748079, 792748094))
BUSY_TIMES = [1512224618 + i for i in range(15)]

CASES = [
    Case("a zero lag in the window", STEPS, [0, 50, 100, 150, 200], HUNDREDS,
         [5200], 200, 600, 0, False, -1, False, False, True, False, "OK"),
    Case("silent exactly as long as the window spans is not stopped", STEPS,
         [0, 50, 100, 150, 200], HUNDREDS, [5200], 200, 900, 0,
         False, -1, False, False, True, False, "OK"),
    Case("stopped, though caught up at the window's start", STEPS, [0, 50, 100, 150, 200],
         HUNDREDS, [5200], 200, 1000, 0, False, -1, True, False, True, False, "STOP"),
    Case("stopped, always lagging", STEPS, [50, 100, 150, 200, 250], HUNDREDS,
         [5250], 250, 1000, 0, True, -1, True, False, True, False, "STOP"),
    Case("same offset with a zero lag in the window", [1000] * 5, [0, 50, 100, 150, 200],
         HUNDREDS, [1200], 200, 600, 0, False, -1, False, True, True, False, "OK"),
    Case("same offset, always lagging", [1000] * 5, [100, 150, 200, 250, 300], HUNDREDS,
         [1300], 300, 600, 0, True, -1, False, True, True, False, "STALL"),
    Case("same offset, same lag", [1000] * 5, [100] * 5, HUNDREDS,
         [1100], 100, 600, 0, True, -1, False, True, True, False, "STALL"),
    Case("a rewind caught up again", [1000, 2000, 3000, 2000, 4000],
         [100, 150, 200, 1250, 300], HUNDREDS, [4300], 300, 600, 0,
         True, 3, False, False, False, False, "OK"),
    Case("no current lag, however old the commits", STEPS, [50, 100, 150, 200, 250],
         HUNDREDS, [5250], 0, 1000, 0, True, -1, True, False, True, False, "OK"),
    Case("caught up at every commit, then the log moved on", BUSY_OFFSETS, [0] * 15,
         BUSY_TIMES, [792749024, 792749000, 792748800, 792748600, 792748500], 931,
         1512224650, 0, False, -1, True, False, True, False, "STOP"),
    Case("silent, but caught up at a recent log end", BUSY_OFFSETS, [0] * 15, BUSY_TIMES,
         [792748094, 792748093, 792748093, 792748093], 1, 1512224650, 0,
         False, -1, True, False, True, True, "OK"),
    Case("unknown lags are skipped", [1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500],
         [0, None, 50, None, 100, None, 150, None, 200, None],
         [100, 150, 200, 250, 300, 350, 400, 450, 500, 550], [5700], 200, 600, 0,
         False, -1, False, False, True, False, "OK"),
    Case("a current lag within the allowed lag", [1000, 2000, 2000], [2, 1, 1],
         [100, 200, 300], [2001], 1, 550, 1, False, -1, True, False, False, False, "OK"),
    Case("same offset, lagging beyond the allowed lag", [1000] * 5,
         [100, 150, 200, 250, 300], HUNDREDS, [1300], 300, 600, 99,
         True, -1, False, True, True, False, "STALL"),
    Case("a rewind caught up again, with an allowed lag", [1000, 2000, 3000, 2000, 4000],
         [100, 150, 200, 1250, 300], HUNDREDS, [4300], 300, 600, 99,
         True, 3, False, False, False, False, "OK"),
    Case("a rewind not caught up", [1000, 2000, 3000, 2000, 2500],
         [100, 150, 200, 1250, 300], HUNDREDS, [4300], 300, 600, 0,
         True, 3, False, False, False, False, "REWIND"),
]  # fmt: skip


def _window(case: Case) -> list[Commit]:
    return [
        Commit(o, lag, t * 1000)
        for o, lag, t in zip(case.offsets, case.lags, case.times_s, strict=True)
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.why for c in CASES])
def test_rules_and_status(case: Case) -> None:
    window = _window(case)
    now_ms = case.now_s * 1000
    assert lag_always_above(window, case.allowed_lag) == case.always_lagging
    assert rewind_index(window) == case.rewind_at
    assert offsets_stopped(window, now_ms) == case.stopped
    assert offsets_stalled(window) == case.stalled
    assert lag_not_decreasing(window) == case.lag_not_decreasing
    assert recent_lag_zero(window, case.broker_offsets) == case.recently_caught_up
    status = partition_status(
        window, case.current_lag, now_ms, case.broker_offsets, case.allowed_lag
    )
    assert status == case.status


def test_an_empty_window_is_ok() -> None:
    assert partition_status([], 100, 1000, [0]) == "OK"


def test_a_group_is_as_bad_as_its_worst_partition() -> None:
    assert group_status([]) == "OK"
    assert group_status(["OK", "WARN"]) == "WARN"
    for bad in ("STOP", "STALL", "REWIND"):
        assert group_status(["OK", "WARN", bad]) == "ERR"
