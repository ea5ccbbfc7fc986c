"""Burrow's consumer status rules, evaluated per partition over a window of commits.

The window is a partition's last ``window`` commits (Burrow's ``intervals``,
10 by default), oldest first; each holds the committed offset, its lag (None
when the log end was unknown then) and its time. ``broker_offsets`` are the
partition's recent log end offsets (the last ``window`` seen). At an evaluation
time ``now`` with ``current_lag`` (the log end then minus the last committed
offset), the rules run in Burrow 1.x's order (its evaluator since the 2017
rewrite, ``calculatePartitionStatus``):

0. the current lag is at most ``allowed_lag`` (0 by default): OK, whatever the
   window says;
1. no commit for longer than the window spans (now - last > last - first) and
   none of the recent log ends is at or below the last committed offset: STOP.
   This comes first, so a consumer that was caught up and then stopped while
   producers went on is STOP once its zero-lag commits are no longer recent;
2. a committed offset went backwards and no later commit of the window came
   back to where it was before: REWIND (a rewind caught up again is forgiven);
3. some commit of the window had a lag of at most ``allowed_lag``: OK;
4. the offset never moved over the window: STALL;
5. the offset moved but the lag never went down: WARN;
6. otherwise OK.

A group's status is its worst partition's, where STOP, STALL and REWIND make the
group ERR, as in Burrow. Used by ``kgroups analytics`` (on Spark) and by
``kgroups lag-exporter``'s status page.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

SEVERITY = {"OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}
GROUP_STATUS = {
    "OK": "OK",
    "WARN": "WARN",
    "ERR": "ERR",
    "STOP": "ERR",
    "STALL": "ERR",
    "REWIND": "ERR",
}


class Commit(NamedTuple):
    offset: int
    lag: int | None
    t_ms: int


def partition_status(
    window: Sequence[Commit],
    current_lag: int,
    now_ms: int,
    broker_offsets: Sequence[int] = (),
    allowed_lag: int = 0,
) -> str:
    if not window or current_lag <= allowed_lag:
        return "OK"
    if offsets_stopped(window, now_ms) and not recent_lag_zero(window, broker_offsets):
        return "STOP"
    rewind = rewind_index(window)
    if rewind > 0 and not rewind_recovered(window, rewind):
        return "REWIND"
    if lag_always_above(window, allowed_lag):
        if offsets_stalled(window):
            return "STALL"
        if lag_not_decreasing(window):
            return "WARN"
    return "OK"


def lag_always_above(window: Sequence[Commit], allowed_lag: int) -> bool:
    """No commit of the window had a known lag within ``allowed_lag``."""
    return all(c.lag is None or c.lag > allowed_lag for c in window)


def rewind_index(window: Sequence[Commit]) -> int:
    """The index of the first commit lower than the one before it, or -1."""
    for i in range(1, len(window)):
        if window[i].offset < window[i - 1].offset:
            return i
    return -1


def rewind_recovered(window: Sequence[Commit], index: int) -> bool:
    """A commit from ``index`` on is back at (or past) the offset before the rewind."""
    before = window[index - 1].offset
    return any(window[i].offset >= before for i in range(index, len(window)))


def offsets_stopped(window: Sequence[Commit], now_ms: int) -> bool:
    """The time since the last commit exceeds the time the window spans."""
    first, last = window[0].t_ms, window[-1].t_ms
    return now_ms - last > last - first


def offsets_stalled(window: Sequence[Commit]) -> bool:
    """Every commit of the window has the same offset."""
    return all(c.offset == window[0].offset for c in window)


def lag_not_decreasing(window: Sequence[Commit]) -> bool:
    """The known lags of the window never go down from one to the next."""
    known = [c.lag for c in window if c.lag is not None]
    return all(b >= a for a, b in pairwise(known))


def recent_lag_zero(window: Sequence[Commit], broker_offsets: Sequence[int]) -> bool:
    """One of the recent log ends was at or below the last committed offset: the
    consumer was caught up a moment ago, so it is not called stopped yet."""
    last = window[-1].offset
    return any(end <= last for end in broker_offsets)


def group_status(partition_statuses: Sequence[str]) -> str:
    """The worst partition's status, as a group status (OK, WARN or ERR)."""
    if not partition_statuses:
        return "OK"
    return GROUP_STATUS[max(partition_statuses, key=SEVERITY.__getitem__)]
