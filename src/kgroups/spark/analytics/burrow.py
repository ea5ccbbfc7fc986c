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
