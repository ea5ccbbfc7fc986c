"""Offset ranges: the unit of work of a read, planned on the driver, read on executors.

A range is [start, end) of one partition. A batch read has one range per
partition, split further when ``maxRecordsPerPartition`` caps a task's records
or ``minPartitions`` asks for more tasks than there are partitions; a
micro-batch has the ranges between two checkpointed offsets, capped by
``maxOffsetsPerTrigger``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from pyspark.sql.datasource import InputPartition

__all__ = ["OffsetRange", "cap_offsets", "plan_ranges", "split_ranges"]


class OffsetRange(InputPartition):
    """Offsets [start, end) of one partition; pickled to the executor that reads it."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)

    def __repr__(self) -> str:
        return f"OffsetRange({self.topic}-{self.partition} [{self.start}, {self.end}))"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetRange) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


def plan_ranges(
    start: Mapping[tuple[str, int], int], end: Mapping[tuple[str, int], int]
) -> list[OffsetRange]:
    """One range per partition that has records between ``start`` and ``end``."""
    return [
        OffsetRange(topic, partition, start.get((topic, partition), end[(topic, partition)]), stop)
        for (topic, partition), stop in sorted(end.items())
        if stop > start.get((topic, partition), stop)
    ]


def split_ranges(
    ranges: list[OffsetRange], min_partitions: int | None, max_records: int | None = None
) -> list[OffsetRange]:
    """Split ranges so that none holds more than ``max_records`` records, then, if
    there are fewer than ``min_partitions``, into about ``min_partitions`` pieces,
    each range in proportion to its size (Spark's rules): one large partition
    does not make one long task, and a single partition can keep every core busy."""
    if max_records is not None:
        ranges = [piece for r in ranges for piece in _pieces(r, math.ceil(r.size / max_records))]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    if total == 0:
        return ranges
    return [
        piece
        for r in ranges
        for piece in _pieces(r, max(1, min(r.size, round(r.size / total * min_partitions))))
    ]


def _pieces(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` cut into ``parts`` ranges of sizes differing by at most one."""
    if parts <= 1:
        return [r]
    step = r.size / parts
    bounds = [r.start + math.floor(i * step) for i in range(parts)] + [r.end]
    return [
        OffsetRange(r.topic, r.partition, lo, hi)
        for lo, hi in itertools.pairwise(bounds)
        if hi > lo
    ]


def cap_offsets(
    start: Mapping[tuple[str, int], int], latest: Mapping[tuple[str, int], int], limit: int
) -> dict[tuple[str, int], int]:
    """End offsets that admit at most ``limit`` records, shared between partitions
    in proportion to what each has waiting (largest remainders get the rest)."""
    waiting = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(waiting.values())
    if total <= limit:
        return dict(latest)
    shares = {tp: limit * n / total for tp, n in waiting.items()}
    take = {tp: math.floor(s) for tp, s in shares.items()}
    left = limit - sum(take.values())
    for tp in sorted(shares, key=lambda tp: (take[tp] - shares[tp], tp))[:left]:
        take[tp] += 1
    return {tp: start.get(tp, end) + take[tp] for tp, end in latest.items()}
