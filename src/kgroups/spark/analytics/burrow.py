"""Burrow's consumer status rules over a cluster's commit history, on Spark.

The rules themselves (``partition_status``) live in kgroups.metrics.burrow,
shared with ``kgroups lag-exporter``; this module feeds them windows of
commits sorted by group, topic and partition, in ``mapInArrow``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kgroups.metrics.burrow import GROUP_STATUS, SEVERITY, Commit, partition_status
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


def evaluate_sorted(batches: Iterator[pa.RecordBatch], window: int) -> Iterator[pa.RecordBatch]:
    """mapInArrow function over events sorted by (group, topic, partition, t_ms,
    kind): commits (kind 0, with lag) fill each partition's window, ticks (kind 1,
    with the log end then) emit a status row (STATUS_SCHEMA)."""
    import pyarrow as pa

    arrow = arrow_of(STATUS_SCHEMA)
    key: tuple[Any, ...] | None = None
    commits: deque[Commit] = deque(maxlen=window)
    # The log ends of the partition's last ``window`` ticks: Burrow's broker offsets.
    log_ends: deque[int] = deque(maxlen=window)
    for batch in batches:
        out: list[dict[str, Any]] = []
        for row in batch.take(needed_rows(batch, window)).to_pylist():
            this = (row["group"], row["topic"], row["partition"])
            if this != key:
                key = this
                commits.clear()
                log_ends.clear()
            if row["kind"] == 0:
                commits.append(Commit(row["offset"], row["lag_offsets"], row["t_ms"]))
                continue
            log_end = row["log_end"]
            if log_end is not None:
                log_ends.append(log_end)
            if not commits:
                continue
            committed = commits[-1].offset
            current = (commits[-1].lag or 0) if log_end is None else max(0, log_end - committed)
            out.append(
                {
                    "group": this[0],
                    "topic": this[1],
                    "partition": this[2],
                    "t_ms": row["t_ms"],
                    "committed_offset": committed,
                    "log_end": log_end,
                    "lag_offsets": current,
                    "status": partition_status(commits, current, row["t_ms"], log_ends),
                    "window_commits": len(commits),
                }
            )
        yield pa.RecordBatch.from_pylist(out, schema=arrow)


def needed_rows(batch: pa.RecordBatch, window: int) -> pa.Array:
    """The rows of a sorted batch that can change a status row: every tick, the
    last ``window`` commits before each tick of its partition, and the last
    ``window`` commits of the batch's last partition (its next tick may be in the
    next batch). Nearly every commit is in none: this leaves them out before
    rows become Python objects."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = batch.num_rows
    if n == 0:
        return pa.array([], pa.int64())
    new_key = np.zeros(n, np.bool_)
    new_key[0] = True
    for name in ("group", "topic", "partition"):
        column = batch.column(name)
        differs = pc.fill_null(pc.not_equal(column[1:], column[:-1]), True)
        both_null = pc.and_(pc.is_null(column[1:]), pc.is_null(column[:-1]))
        new_key[1:] |= pc.and_not(differs, both_null).to_numpy(zero_copy_only=False)
    segment = np.cumsum(new_key)
    tick = batch.column("kind").to_numpy(zero_copy_only=False) == 1
    positions = np.arange(n)
    # The next tick at or after each row (n: none), and the commits before it.
    next_tick = np.minimum.accumulate(np.where(tick, positions, n)[::-1])[::-1]
    commits_upto = np.concatenate([[0], np.cumsum(~tick)])
    tick_at = np.minimum(next_tick, n - 1)
    before_tick = (next_tick < n) & (segment[tick_at] == segment)
    later_commits = commits_upto[np.where(before_tick, next_tick, n)] - commits_upto[positions + 1]
    keep = tick | (~tick & (before_tick | (segment == segment[-1])) & (later_commits < window))
    return pa.array(np.flatnonzero(keep))
