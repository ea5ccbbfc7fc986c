"""Retention by time and by size, with time injected."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import iter_batches
from kgroups.storage.log import SegmentLog

HOUR = 3_600_000


def log_with_hourly_segments(directory: Path, config: LogConfig, hours: int) -> SegmentLog:
    """One segment per hour of record time (segment.ms is an hour)."""
    plog = SegmentLog.open(directory, config, NOW)
    for h in range(hours):
        for i in range(5):
            plog.append(make_batch(2, value_size=50, timestamp=NOW + h * HOUR + i), NOW)
    return plog


def test_retention_by_time(tmp_path: Path) -> None:
    config = LogConfig(segment_ms=HOUR - 1, retention_ms=2 * HOUR)
    plog = log_with_hourly_segments(tmp_path / "t-0", config, 6)
    assert len(plog.segments) == 6
    end = plog.log_end_offset
    # Newest record of segment h is at NOW + h*HOUR + 5; it expires 2h later.
    assert plog.apply_retention(NOW + 2 * HOUR + 5) == 0
    assert plog.apply_retention(NOW + 2 * HOUR + 6) == 1
    assert plog.log_start_offset == 10
    assert plog.apply_retention(NOW + 4 * HOUR + 100) == 2
    assert plog.log_start_offset == 30
    assert not (tmp_path / "t-0" / f"{0:020d}.log").exists()
    with pytest.raises(KafkaError) as exc:
        plog.read(29, 100)
    assert exc.value.error_code == ErrorCode.offset_out_of_range
    assert [h.base_offset for _, h in iter_batches(plog.read(30, 100))] == [30]
    assert plog.log_end_offset == end
    r = plog.append(make_batch(1, timestamp=NOW + 6 * HOUR), NOW)
    assert r.log_start_offset == 30
    plog.close()
    # The largest timestamps survive a clean reopen (via the time index).
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW, recover=False)
    assert plog.log_start_offset == 30
    assert plog.apply_retention(NOW + 5 * HOUR + 5) == 0
    assert plog.apply_retention(NOW + 5 * HOUR + 6) == 1
    assert plog.log_start_offset == 40
    plog.close()


def test_fully_expired_log_rolls_then_empties(tmp_path: Path) -> None:
    config = LogConfig(segment_ms=HOUR - 1, retention_ms=HOUR)
    plog = log_with_hourly_segments(tmp_path / "t-0", config, 3)
    end = plog.log_end_offset
    assert plog.apply_retention(NOW + 10 * HOUR) == 3
    assert plog.log_start_offset == plog.log_end_offset == end
    assert len(plog.segments) == 1 and plog.segments[0].is_empty
    assert plog.read(end, 100) == b""
    assert plog.append(make_batch(1, timestamp=NOW + 10 * HOUR), NOW).base_offset == end
    assert plog.apply_retention(NOW + 10 * HOUR) == 0
    # An expired active segment is rolled away too, as in Kafka.
    assert plog.apply_retention(NOW + 12 * HOUR) == 1
    assert plog.log_start_offset == plog.log_end_offset == end + 1
    plog.close()


def test_unlimited_and_compact_only_keep_everything(tmp_path: Path) -> None:
    for i, config in enumerate(
        [
            LogConfig(segment_ms=HOUR - 1, retention_ms=-1),
            LogConfig(segment_ms=HOUR - 1, retention_ms=1, cleanup_policy="compact"),
        ]
    ):
        plog = log_with_hourly_segments(tmp_path / f"t-{i}", config, 3)
        assert plog.apply_retention(NOW + 1000 * HOUR) == 0
        assert plog.log_start_offset == 0
        plog.close()


def test_retention_by_bytes(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2000)
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    for _ in range(60):
        plog.append(make_batch(3, value_size=60), NOW)
    sizes = [s.size for s in plog.segments]
    total = sum(sizes)
    assert len(sizes) > 4
    # Keep at least retention.bytes: delete only while what remains stays above it.
    limit = total - sizes[0] - sizes[1] + 1
    plog.update_config(LogConfig(segment_bytes=2000, retention_bytes=limit))
    assert plog.apply_retention(NOW) == 1
    assert plog.size >= limit
    plog.update_config(LogConfig(segment_bytes=2000, retention_bytes=limit - 1))
    assert plog.apply_retention(NOW) == 1
    assert plog.size == limit - 1
    plog.update_config(LogConfig(segment_bytes=2000, retention_bytes=0))
    assert plog.apply_retention(NOW) == len(sizes) - 2
    assert plog.size == 0 and plog.log_start_offset == plog.log_end_offset
    plog.close()


def test_producer_snapshots_follow_the_log_start(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1000, retention_bytes=0)
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    for seq in range(0, 60, 3):
        plog.append(make_batch(3, producer_id=1, producer_epoch=0, base_sequence=seq), NOW)
    plog.apply_retention(NOW)
    snapshots = sorted(int(p.name[:20]) for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert snapshots and all(s >= plog.log_start_offset for s in snapshots)
    plog.close()
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    # The producer is still known after its data is gone: a retry is a duplicate.
    retry = plog.append(make_batch(3, producer_id=1, producer_epoch=0, base_sequence=57), NOW)
    assert retry.duplicate
    plog.close()


def test_segments_without_timestamps_age_by_file_time(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=600, retention_ms=HOUR)
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    for _ in range(10):
        plog.append(make_batch(1, value_size=100, timestamp=-1), NOW)
    first = plog.segments[0]
    assert first.max_timestamp < 0
    os.utime(first.log.path, ns=(NOW * 1_000_000, NOW * 1_000_000))
    assert plog.apply_retention(NOW + HOUR) == 0
    assert plog.apply_retention(NOW + HOUR + 1) == 1
    plog.close()
