"""Burrow's consumer status rules, evaluated per partition over a window of commits.

The window is a partition's last ``window`` commits (Burrow's ``intervals``,
10 by default); each holds the committed offset, its lag, and its time. At an
evaluation time ``now`` with ``current_lag`` (the log end then minus the last
committed offset), in Burrow's order:

1. lag was zero at some commit of the window, or is zero now: OK;
2. a committed offset went backwards: REWIND;
3. no commit for longer than the window spans (now - last > last - first): STOP;
4. the offset never moved over the window: STALL;
5. the offset moved but the lag never went down: WARN;
6. otherwise OK.

A group's status is its worst partition's, where STOP, STALL and REWIND make the
group ERR, as in Burrow. Used by ``kgroups analytics`` (on Spark) and by
``kgroups lag-exporter``'s status page.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    lag: int
    t_ms: int


def partition_status(window: Sequence[Commit], current_lag: int, now_ms: int) -> str:
    if not window or current_lag <= 0 or any(c.lag == 0 for c in window):
        return "OK"
    pairs = list(zip(window, list(window)[1:], strict=False))
    if any(b.offset < a.offset for a, b in pairs):
        return "REWIND"
    first, last = window[0], window[-1]
    if now_ms - last.t_ms > last.t_ms - first.t_ms:
        return "STOP"
    if all(b.offset == a.offset for a, b in pairs):
        return "STALL"
    if all(b.lag >= a.lag for a, b in pairs):
        return "WARN"
    return "OK"


def group_status(partition_statuses: Sequence[str]) -> str:
    """The worst partition's status, as a group status (OK, WARN or ERR)."""
    if not partition_statuses:
        return "OK"
    return GROUP_STATUS[max(partition_statuses, key=SEVERITY.__getitem__)]
