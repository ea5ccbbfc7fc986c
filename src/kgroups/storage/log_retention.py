"""Shrinking a partition log: which segments retention deletes, truncation, and
swapping a cleaner's output in for the segments it replaces.

Retention deletes whole segments, oldest first. Compaction (``cleaner``) rewrites
closed segments on a worker thread and hands the result to the log on the loop.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from kgroups.partitions.config import LogConfig
from kgroups.storage.log_files import DELETED_SUFFIX, SWAP_SUFFIX
from kgroups.storage.log_open import new_segment
from kgroups.storage.segment import Segment

__all__ = ["delete_oldest", "expired_segment_count", "swap_in", "truncate_segments"]


def expired_segment_count(segments: Sequence[Segment], config: LogConfig, now_ms: int) -> int:
    """How many of the oldest segments are past ``retention.ms`` or beyond
    ``retention.bytes`` (a segment counts as old by its largest record timestamp)."""
    count = 0
    if config.retention_ms >= 0:
        for segment in segments:
            if segment.is_empty or now_ms - segment.largest_timestamp <= config.retention_ms:
                break
            count += 1
    if config.retention_bytes >= 0:
        excess = sum(s.size for s in segments) - config.retention_bytes
        by_size = 0
        for segment in segments:
            if segment.is_empty or excess - segment.size < 0:
                break
            excess -= segment.size
            by_size += 1
        count = max(count, by_size)
    return count


def delete_oldest(segments: list[Segment], bases: list[int], count: int) -> list[Path]:
    """Take the ``count`` oldest segments out of ``segments`` and ``bases`` (in
    place), renamed ``.deleted`` and closed. Returns their files, for the caller
    to unlink off the loop: freeing a big file's blocks can take a while
    (``open`` removes leftovers)."""
    doomed = segments[:count]
    del segments[:count]
    del bases[:count]
    files: list[Path] = []
    for segment in doomed:
        segment.change_suffix(DELETED_SUFFIX)
        segment.close()
        files.extend(f.path for f in segment.files())
    return files


def truncate_segments(
    directory: Path,
    config: LogConfig,
    segments: list[Segment],
    bases: Sequence[int],
    offset: int,
    now_ms: int,
) -> None:
    """Cut ``segments`` (in place) before the batch holding ``offset``; at or below
    the log start, replace them all by one empty segment starting at ``offset``."""
    if offset <= segments[0].base_offset:
        for segment in segments:
            segment.delete()
        segments[:] = [new_segment(directory, config, offset, now_ms)]
    else:
        keep = bisect_right(bases, offset - 1)  # segments starting below offset
        for segment in segments[keep:]:
            segment.delete()
        del segments[keep:]
        segments[-1].truncate_to(offset)


def swap_in(
    directory: Path,
    segments: list[Segment],
    bases: list[int],
    old: Sequence[Segment],
    new: Segment,
    step: Callable[[str], None],
) -> list[Path]:
    """Rename and splice ``new`` in place of ``old`` in ``segments`` and ``bases``
    (see ``SegmentLog.replace_segments``); returns the ``.deleted`` files."""
    first = next((i for i, s in enumerate(segments) if s is old[0]), -1)
    end = first + len(old)
    if (
        first < 0
        or end >= len(segments)
        or any(a is not b for a, b in zip(segments[first:end], old, strict=True))
    ):
        raise ValueError(f"{directory.name}: segments to replace are not in the log")
    new.change_suffix(SWAP_SUFFIX)
    step("swap")
    doomed: list[Path] = []
    for segment in old:
        segment.change_suffix(DELETED_SUFFIX)
        doomed.extend(f.path for f in segment.files())
        step(f"deleted {segment.base_offset}")
    segments[first:end] = [new]
    bases[first:end] = [new.base_offset]
    for segment in old:
        segment.close()
    new.change_suffix("")
    step("live")
    return doomed
