"""Idempotent producers' state snapshots on disk: ``<offset>.snapshot`` files
in a partition directory, Kafka's names, written durably and pruned at rolls.

A log that cannot write one at a roll or at a clean shutdown logs it and goes
on: opening it replays the batches after an older snapshot instead.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from kgroups.durable import replace_file
from kgroups.partitions.producer_state import SNAPSHOT_SUFFIX, ProducerStateManager
from kgroups.storage.txn_index import sync_txn_indexes

log = logging.getLogger(__name__)

# Snapshots a roll keeps (besides those dropped with the segments they follow).
_SNAPSHOTS_KEPT = 3


def snapshot_at_roll(
    producers: ProducerStateManager, directory: Path, offset: int, log_start_offset: int
) -> None:
    """Snapshot at a new segment's base offset, keeping the last few (and
    none below the log start); a failure is logged."""
    try:
        write_snapshot(producers, directory, offset)
        snapshots = list_snapshots(directory)
        keep_from = snapshots[-_SNAPSHOTS_KEPT][0] if len(snapshots) > _SNAPSHOTS_KEPT else 0
        delete_snapshots(directory, below=max(keep_from, log_start_offset))
    except OSError as exc:
        _cannot_write(directory, exc)


def snapshot_at_close(producers: ProducerStateManager, directory: Path, offset: int) -> bool:
    """Snapshot at the log end of a log being closed; whether it was written
    (a failure is logged)."""
    try:
        write_snapshot(producers, directory, offset)
    except OSError as exc:
        _cannot_write(directory, exc)
        return False
    return True


def _cannot_write(directory: Path, exc: OSError) -> None:
    log.warning("cannot write producer snapshot in %s: %s", directory, exc)


def write_snapshot(producers: ProducerStateManager, directory: Path, offset: int) -> Path:
    """Write ``<offset>.snapshot`` (via a temporary file, so never half a file)."""
    return write_snapshot_file(directory, offset, producers.to_snapshot())


def write_snapshot_file(directory: Path, offset: int, snapshot: bytes) -> Path:
    """Write ``to_snapshot()``'s bytes as ``<offset>.snapshot``, durably (file and
    directory fsynced); safe on a worker thread. The aborted transaction index
    is fsynced first: recovery does not replay the markers below a snapshot."""
    sync_txn_indexes(directory)
    path = snapshot_path(directory, offset)
    replace_file(path, snapshot)
    return path


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """``(offset, path)`` of every snapshot file, oldest first."""
    found = []
    for path in directory.glob("*" + SNAPSHOT_SUFFIX):
        stem = path.name[: -len(SNAPSHOT_SUFFIX)]
        if stem.isdigit():
            found.append((int(stem), path))
    found.sort()
    return found


def delete_snapshots(
    directory: Path, *, below: int | None = None, above: int | None = None
) -> None:
    for offset, path in list_snapshots(directory):
        if (below is not None and offset < below) or (above is not None and offset > above):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
