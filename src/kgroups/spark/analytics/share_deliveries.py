"""Each share partition's delivery state over time, from its
``__share_group_state`` records (the ``share_state`` table).

A share partition's state is its start offset (every record before it is
done with: acknowledged, archived, or skipped) and, from there on, the
records whose delivery state is worth keeping, as state batches: a range of
offsets with its state (AVAILABLE, ACKNOWLEDGED, ARCHIVED; an acquisition is
stored as AVAILABLE, as it does not outlive the broker) and its delivery
count. A ShareSnapshot holds the whole state; a ShareUpdate, the batches
that changed since, which win over the snapshot's where they overlap, and a
new start offset unless it is -1 (Kafka's share coordinator applies them so).

The records are replayed in log order, one row each, with what the state
says at that moment about the records between the start offset and the last
one it names (the in-flight window), and, over the history so far, how many
distinct records the state has ever shown delivered, delivered more than
once, or archived. The state is written when a delivery ends (acknowledged,
released, timed out) or the start offset moves, not when records are
acquired, so a record acquired and acknowledged between two writes never
appears in it: the ``*_seen`` counts are lower bounds, and
``completed_total`` (how far the start offset moved) is the exact count of
records done with, however they ended. A record delivered and not done with
(``delivered_not_done``) was either acquired when the state was written or
offered again: stored, both are AVAILABLE with their delivery count.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgroups.share_partitions.states import RecordState
from kgroups.spark.analytics.arrow_map import map_sorted
from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["SHARE_STATE_SCHEMA", "Span", "overlay", "partition_history", "share_state"]

SHARE_STATE_SCHEMA = struct(
    ("group", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("record_ms", "long"),
    ("state_offset", "long"),
    ("event", "string"),
    ("snapshot_epoch", "int"),
    ("start_offset", "long"),
    ("in_flight_end", "long"),
    ("delivered_not_done", "long"),
    ("acknowledged", "long"),
    ("archived", "long"),
    ("delivered", "long"),
    ("redelivered", "long"),
    ("max_delivery_count", "int"),
    ("completed", "long"),
    ("completed_total", "long"),
    ("delivered_seen", "long"),
    ("redelivered_seen", "long"),
    ("archived_seen", "long"),
)

# An acquisition does not outlive the broker: a stored ACQUIRED is AVAILABLE.
_OFFERED = (int(RecordState.AVAILABLE), int(RecordState.ACQUIRED))
_ACKNOWLEDGED = int(RecordState.ACKNOWLEDGED)
_ARCHIVED = int(RecordState.ARCHIVED)
_EVENTS = {"share_snapshot": "snapshot", "share_update": "update"}


@dataclass(frozen=True, slots=True)
class Span:
    """A state batch: offsets ``first``..``last`` in one state and delivery count."""

    first: int
    last: int
    state: int
    count: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1


def overlay(spans: list[Span], newer: Iterable[Span]) -> list[Span]:
    """``spans`` with ``newer`` written over them: where they overlap, the newer
    state wins and the older span keeps only what lies outside it."""
    out = list(spans)
    for new in newer:
        kept: list[Span] = []
        for old in out:
            if old.last < new.first or old.first > new.last:
                kept.append(old)
                continue
            if old.first < new.first:
                kept.append(Span(old.first, new.first - 1, old.state, old.count))
            if old.last > new.last:
                kept.append(Span(new.last + 1, old.last, old.state, old.count))
        kept.append(new)
        out = kept
    return sorted(out, key=lambda s: s.first)


def _from(spans: list[Span], start: int) -> list[Span]:
    """The spans from ``start`` on: what is before it is done with."""
    return [
        s if s.first >= start else Span(start, s.last, s.state, s.count)
        for s in spans
        if s.last >= start
    ]


@dataclass
class _Seen:
    """Distinct offsets, as sorted disjoint ranges [first, last]."""

    firsts: list[int] = field(default_factory=list)
    lasts: list[int] = field(default_factory=list)
    total: int = 0

    def add(self, first: int, last: int) -> None:
        # The ranges that touch or overlap [first, last] merge with it.
        lo = bisect.bisect_left(self.lasts, first - 1)
        hi = bisect.bisect_right(self.firsts, last + 1)
        if lo < hi:
            first = min(first, self.firsts[lo])
            last = max(last, self.lasts[hi - 1])
            merged = zip(self.firsts[lo:hi], self.lasts[lo:hi], strict=True)
            self.total -= sum(b - a + 1 for a, b in merged)
        self.firsts[lo:hi] = [first]
        self.lasts[lo:hi] = [last]
        self.total += last - first + 1


@dataclass
class _Partition:
    spans: list[Span] = field(default_factory=list)
    start: int | None = None
    first_start: int | None = None
    delivered: _Seen = field(default_factory=_Seen)
    redelivered: _Seen = field(default_factory=_Seen)
    archived: _Seen = field(default_factory=_Seen)

    def see(self) -> None:
        for s in self.spans:
            if s.count >= 1:
                self.delivered.add(s.first, s.last)
            if s.count >= 2:
                self.redelivered.add(s.first, s.last)
            if s.state == _ARCHIVED:
                self.archived.add(s.first, s.last)


def _spans(batches: Iterable[dict[str, Any]] | None) -> list[Span]:
    return [
        Span(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
        for b in batches or ()
        if b["last_offset"] >= b["first_offset"]
    ]


def _sum(spans: Iterable[Span]) -> int:
    return sum(s.size for s in spans)


def partition_history(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SHARE_STATE_SCHEMA rows of one share partition's records
    (share_state_log rows, in log order)."""
    out: list[dict[str, Any]] = []
    p = _Partition()
    for r in records:
        kind = r["kind"]
        row = {
            "group": r["group"],
            "topic": r["topic"],
            "partition": r["partition"],
            "record_ms": r["record_ms"],
            "state_offset": r["state_offset"],
            "snapshot_epoch": r.get("snapshot_epoch"),
        }
        if kind == "share_state_deleted":
            out.append({**row, "event": "deleted"})
            p = _Partition()
            continue
        if kind not in _EVENTS:
            continue
        previous = p.start
        if kind == "share_snapshot":
            p.spans = _spans(r["batches"])
            start = r["start_offset"]
        else:
            p.spans = overlay(p.spans, _spans(r["batches"]))
            start = r["start_offset"] if r["start_offset"] >= 0 else previous
        if start is None:  # an update with no snapshot before it (compacted away)
            start = min((s.first for s in p.spans), default=0)
        # -1: initialized by the group coordinator, the start not chosen yet
        # (the first fetch chooses it): nothing has moved.
        initialized = start >= 0
        if initialized:
            p.start = start
            p.first_start = start if p.first_start is None else p.first_start
            p.spans = _from(p.spans, start)
        p.see()
        spans = p.spans
        out.append(
            {
                **row,
                "event": _EVENTS[kind],
                "start_offset": start,
                "in_flight_end": max([start] + [s.last + 1 for s in spans]),
                "delivered_not_done": _sum(
                    s for s in spans if s.state in _OFFERED and s.count >= 1
                ),
                "acknowledged": _sum(s for s in spans if s.state == _ACKNOWLEDGED),
                "archived": _sum(s for s in spans if s.state == _ARCHIVED),
                "delivered": _sum(s for s in spans if s.count >= 1),
                "redelivered": _sum(s for s in spans if s.count >= 2),
                "max_delivery_count": max((s.count for s in spans), default=0),
                "completed": None if previous is None or not initialized else start - previous,
                "completed_total": start - p.first_start if initialized else None,
                "delivered_seen": p.delivered.total,
                "redelivered_seen": p.redelivered.total,
                "archived_seen": p.archived.total,
            }
        )
    return out


def _histories(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over state records sorted by (group, topic, partition, state_offset)."""
    import pyarrow as pa

    arrow = arrow_of(SHARE_STATE_SCHEMA)
    current: list[dict[str, Any]] = []

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return row["group"], row["topic"], row["partition"]

    for batch in batches:
        out: list[dict[str, Any]] = []
        for row in batch.to_pylist():
            if current and key(row) != key(current[0]):
                out.extend(partition_history(current))
                current = []
            current.append(row)
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=arrow)
    if current:
        yield pa.RecordBatch.from_pylist(partition_history(current), schema=arrow)


def share_state(state_log: DataFrame, *, on_driver: bool = False) -> DataFrame:
    """The ``share_state`` table: one row per state record of each share
    partition (``on_driver``: replayed on the driver, see arrow_map)."""
    from pyspark.sql import functions as F

    records = state_log.filter(F.col("kind") != "unknown")
    histories = map_sorted(
        records,
        _histories,
        SHARE_STATE_SCHEMA,
        keys=["group", "topic", "partition"],
        then=["state_offset"],
        on_driver=on_driver,
    )
    return histories.withColumn("time", F.timestamp_millis("record_ms"))
