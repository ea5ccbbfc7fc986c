"""Opening a partition log: its segments, checked past the recovery point, and the
idempotent producer state rebuilt from the last snapshot and the batches after it.

Opening after a crash recovers, batch by batch (length, magic, CRC32C, offsets),
every segment that may hold data appended after the *recovery point* (the log
end at the last successful fsync, checkpointed by the log manager); the first
bad batch and everything after it, later segments included, is cut off. Segments
below the recovery point are trusted; after a clean shutdown nothing is scanned.
"""

from __future__ import annotations

import contextlib
import logging
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from kgroups.durable import fsync_directory
from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import CompletedTxn, ProducerStateManager
from kgroups.records.control import read_marker
from kgroups.storage.log_files import (
    index_path,
    log_path,
    prepare_directory,
    time_index_path,
)
from kgroups.storage.producer_snapshots import delete_snapshots, list_snapshots
from kgroups.storage.segment import Segment
from kgroups.storage.txn_index import AbortedTxn, TxnIndex, txn_index_path

__all__ = [
    "LoadedState",
    "aborted_entry",
    "load_producer_state",
    "load_transaction_state",
    "new_segment",
    "open_segments",
]

log = logging.getLogger(__name__)


def open_segments(
    directory: Path,
    config: LogConfig,
    now_ms: int,
    *,
    recover: bool,
    recovery_point: int,
    log_start: int = 0,
) -> list[Segment]:
    """The segments of the log in ``directory`` (created if missing), oldest first.

    With ``recover`` every segment that may hold offsets at or above
    ``recovery_point`` is checked batch by batch; the first bad batch and
    everything after it is cut off. A log ending before ``log_start`` (the
    checkpointed log start) restarts empty there, as Kafka's LogLoader does.
    """
    try:
        directory.mkdir(parents=True)
        fsync_directory(directory.parent)
    except FileExistsError:
        pass
    bases = prepare_directory(directory)
    segments: list[Segment] = []
    try:
        for i, base in enumerate(bases):
            later = bases[i + 1 :]
            check = recover and (not later or later[0] > recovery_point)
            size = log_path(directory, base).stat().st_size if check and later else 0
            segment = Segment.open(
                directory,
                base,
                index_interval_bytes=config.index_interval_bytes,
                max_index_bytes=config.segment_index_bytes,
                now_ms=now_ms,
                recover=check,
            )
            if segments and segment.base_offset < segments[-1].next_offset:
                log.warning(
                    "%s overlaps the segment before it (ends at %d)",
                    segment,
                    segments[-1].next_offset,
                )
            segments.append(segment)
            if segment.size < size:
                # Cut short: the batches after the bad one, in later segments
                # too, cannot be trusted to follow it (Kafka deletes them).
                _delete_segment_files(directory, later)
                break
        if segments and segments[-1].next_offset < log_start:
            log.warning("%s ends below its log start %d: emptied", directory.name, log_start)
            for segment in segments:
                segment.delete()
            segments.clear()
        if not segments:
            segments.append(new_segment(directory, config, log_start, now_ms))
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    return segments


def new_segment(directory: Path, config: LogConfig, base_offset: int, now_ms: int) -> Segment:
    """An empty segment starting at ``base_offset``, indexed as ``config`` says."""
    return Segment.create(
        directory,
        base_offset,
        index_interval_bytes=config.index_interval_bytes,
        max_index_bytes=config.segment_index_bytes,
        now_ms=now_ms,
    )


class LoadedState(NamedTuple):
    producers: ProducerStateManager
    replayed_from: int  # the snapshot's offset (or the log start)
    # Transactions aborted by markers at or after ``replayed_from``, with the
    # base offset of the segment holding the marker.
    aborted: list[tuple[AbortedTxn, int]]


def load_producer_state(
    directory: Path, segments: Sequence[Segment], bases: Sequence[int], end: int
) -> LoadedState:
    """Latest usable snapshot at or below the log end ``end``, then the batches
    after it: data batches move the producers' sequences and open transactions,
    markers close them."""
    delete_snapshots(directory, above=end)
    state = ProducerStateManager()
    aborted: list[tuple[AbortedTxn, int]] = []
    start = segments[0].base_offset
    for offset, path in reversed(list_snapshots(directory)):
        try:
            state = ProducerStateManager.from_snapshot(path.read_bytes())
        except (OSError, ValueError) as exc:
            log.warning("ignoring producer snapshot %s: %s", path, exc)
            continue
        start = max(offset, start)
        break
    replayed_from = start
    if start >= end:
        return LoadedState(state, replayed_from, aborted)
    i = max(0, bisect_right(bases, start) - 1)
    for segment in segments[i:]:
        found = segment.find(start)
        if found is None:
            continue
        for pos, header in segment.scan(found[0]):
            if header.producer_id < 0 or header.base_offset < start:
                continue
            if not header.is_control:
                state.update(header, header.base_offset, header.max_timestamp)
                continue
            marker = read_marker(segment.read(pos, pos + header.size))
            if marker is None:
                continue
            done = state.complete_txn(
                header.producer_id,
                header.producer_epoch,
                marker.coordinator_epoch,
                marker.commit,
                header.base_offset,
            )
            if done.aborted:
                aborted.append((aborted_entry(state, done), segment.base_offset))
        start = segment.next_offset
    return LoadedState(state, replayed_from, aborted)


def load_transaction_state(
    directory: Path, segments: Sequence[Segment], bases: list[int], end: int
) -> tuple[ProducerStateManager, TxnIndex]:
    """The producers' state (``load_producer_state``) and the aborted transaction
    index, both as of the log end ``end``."""
    loaded = load_producer_state(directory, segments, bases, end)
    # Entries from the replayed range are rebuilt from the markers found there.
    index = TxnIndex.load(directory, bases, loaded.replayed_from)
    try:
        for entry, base in loaded.aborted:
            index.add(entry, base)
    except OSError as exc:
        log.warning("cannot write the aborted transaction index of %s: %s", directory, exc)
    return loaded.producers, index


def aborted_entry(state: ProducerStateManager, done: CompletedTxn) -> AbortedTxn:
    """The index entry of an aborted transaction, with the LSO just after it."""
    unstable = state.first_unstable_offset()
    lso = done.last_offset + 1 if unstable is None else unstable
    return AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso)


def _delete_segment_files(directory: Path, bases: Sequence[int]) -> None:
    for base in bases:
        log.warning("%s: deleting segment %d after a truncated one", directory.name, base)
        for path in (
            log_path(directory, base),
            index_path(directory, base),
            time_index_path(directory, base),
            txn_index_path(directory, base),
        ):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    fsync_directory(directory)
