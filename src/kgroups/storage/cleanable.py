"""Which part of a compacted log may be cleaned now, and whether it is worth it.

A compacted log has a *clean* head (cleaned at least once, below the cleaner
checkpoint) and a *dirty* tail. Cleaning may reach up to the first uncleanable
offset: the active segment's base, or earlier the first dirty segment holding a
record younger than ``min.compaction.lag.ms``. As in Kafka, a log is worth
cleaning when its dirty ratio (dirty bytes / all bytes below that offset) is at
least ``min.cleanable.dirty.ratio``, or when its oldest dirty record has waited
longer than ``max.compaction.lag.ms``.

A ``CleanPlan`` is taken on the event loop and holds a snapshot of immutable facts
(closed segments' paths, offsets and sizes), so the cleaner can work from it on
another thread without touching the log; the segments themselves are kept only
to check, at the swap, that the log still has them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import BatchHeader
from kgroups.storage.cleaner_checkpoint import read_clean_offset
from kgroups.storage.log import SegmentLog
from kgroups.storage.segment import Segment

__all__ = ["CleanPlan", "SegmentInfo", "plan_cleaning"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What the cleaner may know about one closed segment."""

    segment: Segment  # for the identity check at the swap only, never read off the loop
    base_offset: int
    next_offset: int
    size: int
    path: Path
    index_entries: int


@dataclass(frozen=True, slots=True)
class CleanPlan:
    log: SegmentLog  # touched only on the loop, when the result is committed
    directory: Path
    config: LogConfig
    now_ms: int
    # Closed segments from the log start up to ``first_uncleanable``, oldest first.
    segments: tuple[SegmentInfo, ...]
    first_dirty: int
    first_uncleanable: int
    dirty_ratio: float
    # Each active idempotent producer's last offset: the batch ending there keeps
    # its header even if all its records go, so producer state survives a restart.
    producer_last_offsets: Mapping[int, int]
    layout_version: int
    # Producer id -> (first offset, marker offset) of its aborted transactions in
    # the cleanable range: their records go, and count for no key.
    aborted: Mapping[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether ``header``'s batch belongs to an aborted transaction."""
        if not header.is_transactional or header.is_control:
            return False
        ranges = self.aborted.get(header.producer_id)
        return ranges is not None and any(
            first <= header.base_offset <= last for first, last in ranges
        )


def _first_dirty(plog: SegmentLog) -> int:
    start, end = plog.log_start_offset, plog.log_end_offset
    checkpoint = read_clean_offset(plog.directory)
    if checkpoint is None or checkpoint < start:
        return start
    if checkpoint > end:
        log.warning(
            "%s: cleaner checkpoint %d is beyond the log end %d; cleaning from the start",
            plog.directory.name,
            checkpoint,
            end,
        )
        return start
    return checkpoint


def plan_cleaning(plog: SegmentLog, now_ms: int, *, force: bool = False) -> CleanPlan | None:
    """A plan to clean ``plog`` now, or None if it is not compacted or not dirty enough.

    ``force`` ignores the dirty ratio (not the compaction lag), and cleans even a
    log with nothing dirty (which expires old tombstones). Runs on the loop.
    """
    config = plog.config
    if not config.compact or plog.closed:
        return None
    segments = plog.segments
    closed = segments[:-1]
    first_dirty = _first_dirty(plog)
    first_uncleanable = segments[-1].base_offset
    unstable = plog.producers.first_unstable_offset()
    if unstable is not None:
        # An open transaction may still abort: nothing from its segment on is cleaned.
        holding = [s.base_offset for s in segments if s.base_offset <= unstable]
        first_uncleanable = min(first_uncleanable, holding[-1] if holding else 0)
    if config.min_compaction_lag_ms > 0:
        horizon = now_ms - config.min_compaction_lag_ms
        for segment in closed:
            if segment.next_offset > first_dirty and segment.largest_timestamp > horizon:
                first_uncleanable = segment.base_offset
                break
    cleanable = [s for s in closed if s.base_offset < first_uncleanable]
    clean_bytes = sum(s.size for s in cleanable if s.next_offset <= first_dirty)
    dirty = [s for s in cleanable if s.next_offset > first_dirty]
    dirty_bytes = sum(s.size for s in dirty)
    if not cleanable or (dirty_bytes == 0 and not force):
        return None
    ratio = dirty_bytes / max(1, clean_bytes + dirty_bytes)
    if ratio < config.min_cleanable_dirty_ratio and not force:
        first_timestamp = dirty[0].rolling_timestamp if dirty else None
        overdue = (
            first_timestamp is not None
            and first_timestamp >= 0
            and now_ms - first_timestamp > config.max_compaction_lag_ms
        )
        if not overdue:
            return None
    producers = {
        pid: entry.last_offset
        for pid, entry in plog.producers.producers.items()
        if entry.last_offset >= 0
    }
    aborted: dict[int, list[tuple[int, int]]] = {}
    for txn in plog.txn_index.aborted(plog.log_start_offset, first_uncleanable):
        aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return CleanPlan(
        log=plog,
        directory=plog.directory,
        config=config,
        now_ms=now_ms,
        segments=tuple(
            SegmentInfo(s, s.base_offset, s.next_offset, s.size, s.log.path, len(s.index))
            for s in cleanable
        ),
        first_dirty=first_dirty,
        first_uncleanable=first_uncleanable,
        dirty_ratio=ratio,
        producer_last_offsets=producers,
        layout_version=plog.layout_version,
        aborted={pid: tuple(ranges) for pid, ranges in aborted.items()},
    )
