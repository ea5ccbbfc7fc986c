"""Builders shared by the compaction tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage_helpers import NOW

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import Record, decode_records, iter_batches
from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import CleanResult, LogCleaner
from kgroups.storage.log import SegmentLog

HOUR = 3_600_000
# Records two hours apart land in different segments (segment.ms is an hour).
COMPACT = LogConfig(
    cleanup_policy="compact",
    segment_ms=HOUR,
    segment_bytes=1 << 20,
    index_interval_bytes=100,
    delete_retention_ms=HOUR,
)

KeyValue = tuple[bytes | None, bytes | None]


def open_compacted(directory: Path, config: LogConfig = COMPACT) -> SegmentLog:
    return SegmentLog.open(directory, config, NOW)


def write_segments(plog: SegmentLog, segments: Sequence[Sequence[KeyValue]]) -> list[int]:
    """Append each group of records as its own segment, one record per batch;
    returns the base offset of each. Time moves on two hours per segment."""
    bases = []
    for i, records in enumerate(segments):
        timestamp = NOW + 2 * i * HOUR
        bases.append(plog.log_end_offset)
        for j, (key, value) in enumerate(records):
            plog.append_records([(key, value, (), timestamp + j)], NOW)
    return bases


def roll(plog: SegmentLog, segments_written: int) -> int:
    """Start a new active segment with one record; returns its offset."""
    timestamp = NOW + 2 * segments_written * HOUR
    return plog.append_records([(b"roll", b"r", (), timestamp)], NOW).base_offset


def all_records(plog: SegmentLog, start: int | None = None) -> list[Record]:
    """Every record from ``start`` (default: the log start) to the end, read as a
    consumer does: batch by batch, moving on to each batch's last offset + 1."""
    offset = plog.log_start_offset if start is None else start
    records: list[Record] = []
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20)
        assert data, f"nothing read at {offset}"
        for pos, header in iter_batches(data):
            records.extend(r for r in decode_records(data[pos : pos + header.size]))
            offset = header.last_offset + 1
    return records


def key_values(records: Sequence[Record]) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in records]


def clean(
    plog: SegmentLog,
    now_ms: int = NOW,
    *,
    force: bool = True,
    cleaner: LogCleaner | None = None,
) -> CleanResult:
    """One whole cleaning round, committed."""
    plan = plan_cleaning(plog, now_ms, force=force)
    assert plan is not None
    result = (cleaner or LogCleaner()).clean(plan)
    assert result.commit()
    result.remove_replaced_files()
    return result


def segment_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".log" in p.name or "index" in p.name)
