"""Shrinking a partition log: which segments retention deletes, truncation, and
swapping a cleaner's output in for the segments it replaces.

Retention deletes whole segments, oldest first. As in Kafka, a segment counts as
old by its largest record timestamp, and an active segment that is entirely
expired is first rolled (so a quiet topic empties too); the active segment itself
is never deleted. Compaction (``cleaner``) rewrites closed segments on a worker
thread and hands the result to the log on the loop.

These functions change the segment list and base offsets they are given in
place; ``SegmentLog`` keeps the rest of its bookkeeping itself.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from kgroups.partitions.config import LogConfig
from kgroups.storage.log_files import DELETED_SUFFIX, SWAP_SUFFIX
from kgroups.storage.log_flush import FlushState
from kgroups.storage.log_open import new_segment
from kgroups.storage.producer_snapshots import delete_snapshots
from kgroups.storage.segment import Segment
from kgroups.storage.txn_index import TxnIndex, txn_index_path

__all__ = ["delete_oldest", "expired_segment_count", "swap_in", "truncate_segments"]

log = logging.getLogger(__name__)


def expired_segment_count(
    segments: Sequence[Segment], config: LogConfig, now_ms: int, log_start: int = 0
) -> int:
    """How many of the oldest segments are wholly before ``log_start``
    (DeleteRecords moved it), past ``retention.ms`` or beyond
    ``retention.bytes`` (these two only if ``cleanup.policy`` has ``delete``)."""
    # Kafka's deleteLogStartOffsetBreachedSegments: whatever the policy.
    count = 0
    while count + 1 < len(segments) and segments[count + 1].base_offset <= log_start:
        count += 1
    if not config.delete:
        return count
    if config.retention_ms >= 0:
        by_time = 0
        for segment in segments:
            if segment.is_empty or now_ms - segment.largest_timestamp <= config.retention_ms:
                break
            by_time += 1
        count = max(count, by_time)
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


def delete_oldest(
    directory: Path,
    segments: list[Segment],
    bases: list[int],
    count: int,
    txn_index: TxnIndex,
    flushes: FlushState,
    retired: list[Path],
) -> None:
    """Take the ``count`` oldest segments out of ``segments`` and ``bases``, renamed
    ``.deleted`` and closed, with their aborted transactions and the producer
    snapshots below the new log start. Their files are added to ``retired``, for
    the caller to unlink off the loop: freeing a big file's blocks can take a while
    (``open`` removes leftovers)."""
    doomed = segments[:count]
    del segments[:count]
    del bases[:count]
    files: list[Path] = []
    for segment in doomed:
        segment.change_suffix(DELETED_SUFFIX)
        segment.close()
        files.extend(f.path for f in segment.files())
    retired.extend(files)
    for segment in doomed:
        path = txn_index_path(directory, segment.base_offset)
        if path.exists():
            retired.append(path)
    start = segments[0].base_offset
    txn_index.forget_below(start)
    flushes.dir_changes += 1  # after the renames, so that a flush covers them
    delete_snapshots(directory, below=start)
    log.info("%s: deleted %d segment(s); log start offset is now %d", directory.name, count, start)


def truncate_segments(
    directory: Path,
    config: LogConfig,
    segments: list[Segment],
    bases: list[int],
    offset: int,
    now_ms: int,
) -> None:
    """Cut ``segments`` and ``bases`` before the batch holding ``offset``; at or
    below the log start, replace them all by one empty segment starting at ``offset``."""
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
    bases[:] = [s.base_offset for s in segments]


def swap_in(
    directory: Path,
    segments: list[Segment],
    bases: list[int],
    old: Sequence[Segment],
    new: Segment,
    step: Callable[[str], None] | None,
) -> list[Path]:
    """Rename and splice ``new`` (a cleaner's output, files suffixed ``.cleaned``)
    in place of the consecutive closed segments ``old`` in ``segments`` and
    ``bases``. Renames only, so it runs on the loop.

    Renaming ``new`` to ``.swap`` is the commit point: a crash before it leaves
    the old segments (``open`` discards ``.cleaned`` files); after it, ``open``
    completes the swap, replacing every segment whose base offset lies within
    ``new``'s offsets, so ``new`` must end at ``old``'s last offset. The old
    segments are then renamed ``.deleted`` and closed, and ``new`` becomes live.
    Returns the ``.deleted`` files, for the caller to remove off the loop
    (``open`` removes any left). ``step``, if given, is called after each step.
    """
    step = step or _no_step
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


def _no_step(_name: str) -> None:
    pass
