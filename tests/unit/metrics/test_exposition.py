"""The text format's escaping, and lag's rules for seconds."""

from __future__ import annotations

import math

from kgroups.metrics.exposition import Exposition
from kgroups.metrics.lag import partition_lag


def _lag(committed: int, end: int, first_ms: int | None, now_ms: int) -> tuple[int, float]:
    row = partition_lag("g", "t", 0, committed, end, first_ms, now_ms)
    return row.lag, row.lag_seconds


def test_label_values_are_escaped() -> None:
    out = Exposition()
    out.family("m", "gauge", "help")
    out.sample("m", 1, group='a"b\\c\nd')
    out.sample("m", math.nan, group="x")
    lines = out.text().splitlines()
    assert lines[2] == 'm{group="a\\"b\\\\c\\nd"} 1'
    assert lines[3] == 'm{group="x"} NaN'


def test_lag_seconds_is_the_age_of_the_first_unconsumed_record() -> None:
    assert _lag(4, 10, first_ms=1_000, now_ms=31_000) == (6, 30.0)


def test_no_lag_is_zero_seconds_whatever_the_timestamp() -> None:
    assert _lag(10, 10, first_ms=None, now_ms=5) == (0, 0.0)
    assert _lag(12, 10, first_ms=None, now_ms=5) == (0, 0.0)


def test_unknown_timestamp_is_nan_and_a_future_one_zero() -> None:
    assert math.isnan(_lag(1, 2, first_ms=None, now_ms=5)[1])
    assert _lag(1, 2, first_ms=9, now_ms=5) == (1, 0.0)
