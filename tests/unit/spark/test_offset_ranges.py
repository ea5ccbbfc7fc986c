"""How a read's offset ranges are cut into tasks (minPartitions, maxRecordsPerPartition)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kgroups.spark.offset_ranges import OffsetRange, split_ranges


def _covers(pieces: list[OffsetRange], ranges: list[OffsetRange]) -> bool:
    offsets = sorted((p.topic, p.partition, o) for p in pieces for o in range(p.start, p.end))
    return offsets == sorted(
        (r.topic, r.partition, o) for r in ranges for o in range(r.start, r.end)
    )


def test_max_records_caps_every_task() -> None:
    ranges = [OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 500, 510)]
    pieces = split_ranges(ranges, None, 300)
    assert [(p.partition, p.size) for p in pieces] == [(0, 250)] * 4 + [(1, 10)]
    assert _covers(pieces, ranges)


def test_min_partitions_then_splits_the_capped_pieces_further() -> None:
    ranges = [OffsetRange("t", 0, 0, 1000)]
    pieces = split_ranges(ranges, 8, 500)
    assert len(pieces) == 8
    assert max(p.size for p in pieces) - min(p.size for p in pieces) <= 1
    assert _covers(pieces, ranges)


def test_one_partition_becomes_one_task_a_core() -> None:
    ranges = [OffsetRange("t", 0, 10, 1_000_010)]
    pieces = split_ranges(ranges, 2)
    assert [(p.start, p.end) for p in pieces] == [(10, 500_010), (500_010, 1_000_010)]


def test_without_options_one_task_a_partition() -> None:
    ranges = [OffsetRange("t", 0, 0, 10), OffsetRange("u", 3, 5, 6)]
    assert split_ranges(ranges, None) == ranges
