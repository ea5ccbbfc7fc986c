"""Tick positions and labels for the report's charts: round times and round lags.

Times step by the first of 1 s, 2 s, 5 s, ... 1 d, 7 d that gives at most
``max_ticks`` ticks, aligned to that step in UTC (a 15-minute step ticks at :00,
:15, ...); labels show the date only where it changes. Lags step by 1, 2 or 5
times a power of ten, from 0 to a round top at or above the largest lag.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["lag_ticks", "time_ticks"]

_SECOND, _MINUTE, _HOUR, _DAY = 1000, 60_000, 3_600_000, 86_400_000
_TIME_STEPS = [
    *(n * _SECOND for n in (1, 2, 5, 10, 15, 30)),
    *(n * _MINUTE for n in (1, 2, 5, 10, 15, 30)),
    *(n * _HOUR for n in (1, 2, 3, 6, 12)),
    *(n * _DAY for n in (1, 2, 7, 14, 30, 91, 365)),
]


def time_ticks(start_ms: int, end_ms: int, max_ticks: int = 8) -> list[tuple[int, str]]:
    """(t_ms, label) of round times within [start_ms, end_ms]."""
    span = max(end_ms - start_ms, 1)
    step = next((s for s in _TIME_STEPS if span / s <= max_ticks - 1), _TIME_STEPS[-1])
    first = -(-start_ms // step) * step
    ticks = []
    previous_day = None
    for t in range(first, end_ms + 1, step):
        when = datetime.fromtimestamp(t / 1000, UTC)
        day = when.date()
        clock = when.strftime("%H:%M:%S" if step < _MINUTE else "%H:%M")
        if step >= _DAY:
            label = when.strftime("%Y-%m-%d")
        elif day != previous_day:
            label = f"{when.strftime('%m-%d')} {clock}"
        else:
            label = clock
        previous_day = day
        ticks.append((t, label))
    return ticks


def lag_ticks(largest: int, max_ticks: int = 5) -> list[int]:
    """0 and round lags up to a round top >= ``largest`` (at least 1)."""
    largest = max(largest, 1)
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            step = factor * magnitude
            if -(-largest // step) <= max_ticks - 1:
                top = -(-largest // step) * step
                return list(range(0, top + 1, step))
        magnitude *= 10
