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
group ERR, as in Burrow.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "GROUP_STATUS",
    "SEVERITY",
    "STATUS_SCHEMA",
    "Commit",
    "evaluate_sorted",
    "partition_status",
]

SEVERITY = {"OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}
GROUP_STATUS = {
    "OK": "OK",
    "WARN": "WARN",
    "ERR": "ERR",
    "STOP": "ERR",
    "STALL": "ERR",
    "REWIND": "ERR",
}

STATUS_SCHEMA = struct(
    ("group", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("t_ms", "long"),
    ("committed_offset", "long"),
    ("log_end", "long"),
    ("lag_offsets", "long"),
    ("status", "string"),
    ("window_commits", "int"),
)


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


def evaluate_sorted(batches: Iterator[pa.RecordBatch], window: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow function over events sorted by (group, topic, partition, t_ms,
    kind): commits (kind 0, with lag) fill each partition's window, ticks (kind 1,
    with the log end then) emit a status row (STATUS_SCHEMA)."""
    import pyarrow as pa

    arrow = arrow_of(STATUS_SCHEMA)
    key: tuple[Any, ...] | None = None
    commits: deque[Commit] = deque(maxlen=window)
    for batch in batches:
        out: list[dict[str, Any]] = []
        for row in batch.to_pylist():
            this = (row["group"], row["topic"], row["partition"])
            if this != key:
                key = this
                commits.clear()
            if row["kind"] == 0:
                commits.append(Commit(row["offset"], row["lag_offsets"] or 0, row["t_ms"]))
                continue
            if not commits:
                continue
            committed = commits[-1].offset
            log_end = row["log_end"]
            current = commits[-1].lag if log_end is None else max(0, log_end - committed)
            out.append(
                {
                    "group": this[0],
                    "topic": this[1],
                    "partition": this[2],
                    "t_ms": row["t_ms"],
                    "committed_offset": committed,
                    "log_end": log_end,
                    "lag_offsets": current,
                    "status": partition_status(commits, current, row["t_ms"]),
                    "window_commits": len(commits),
                }
            )
        yield pa.RecordBatch.from_pylist(out, schema=arrow)
