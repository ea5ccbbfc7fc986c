"""The files of a partition directory, and tidying them up before opening.

A live segment is ``<20-digit base offset>.log`` with ``.index`` and
``.timeindex`` beside it, and ``.txnindex`` if it holds abort markers. Files with
a further suffix are mid-operation:

``.cleaned``  a cleaner's output still being written: discarded.
``.swap``     a finished replacement for one or more segments (the cleaner fsyncs
              its ``.cleaned`` files, then renames them ``.swap``; that rename is
              the commit point). Opening completes the swap: the segments whose
              offsets the swap covers are removed and the swap becomes live.
``.deleted``  a segment whose deletion began: removed.
``.tmp``      a snapshot or checkpoint being written: removed.

Index files without their ``.log`` are leftovers of an interrupted deletion and
are removed too, so what remains is a clean set of whole segments.

A partition directory being deleted is first renamed ``<name>.<id>-delete``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import uuid
from pathlib import Path

from kgroups.durable import fsync_directory
from kgroups.records.batch import HEADER_SIZE, LOG_OVERHEAD, read_header

__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "SWAP_SUFFIX",
    "index_path",
    "log_path",
    "prepare_directory",
    "remove_log_directory",
    "time_index_path",
]

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
TMP_SUFFIX = ".tmp"
DELETE_DIR_SUFFIX = "-delete"

_SEGMENT_FILE = re.compile(
    r"^(\d{20})\.(log|index|timeindex|txnindex)(\.cleaned|\.swap|\.deleted)?$"
)


def file_stem(base_offset: int) -> str:
    return f"{base_offset:020d}"


def log_path(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / f"{file_stem(base_offset)}.log{suffix}"


def index_path(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / f"{file_stem(base_offset)}.index{suffix}"


def time_index_path(directory: Path, base_offset: int, suffix: str = "") -> Path:
    return directory / f"{file_stem(base_offset)}.timeindex{suffix}"


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _next_offset_of(path: Path) -> int | None:
    """One past the last offset of the whole batches in a log file (None if empty)."""
    next_offset = None
    with path.open("rb") as f:
        pos = 0
        while True:
            f.seek(pos)
            head = f.read(HEADER_SIZE)
            if len(head) < HEADER_SIZE:
                break
            header = read_header(head)
            if header.batch_length + LOG_OVERHEAD < HEADER_SIZE:
                break
            next_offset = header.next_offset
            pos += header.batch_length + LOG_OVERHEAD
    return next_offset


def prepare_directory(directory: Path) -> list[int]:
    """Finish or undo interrupted operations; returns live segment base offsets, sorted."""
    logs: set[int] = set()
    swaps: set[int] = set()
    others: list[tuple[int, Path]] = []
    for path in directory.iterdir():
        name = path.name
        if name.endswith(TMP_SUFFIX):
            _unlink(path)
            continue
        m = _SEGMENT_FILE.match(name)
        if m is None:
            continue
        base = int(m.group(1))
        kind, suffix = m.group(2), m.group(3)
        if suffix in (CLEANED_SUFFIX, DELETED_SUFFIX):
            _unlink(path)
        elif suffix == SWAP_SUFFIX:
            if kind == "log":
                swaps.add(base)
            else:
                _unlink(path)  # indexes are rebuilt for the swapped-in segment
        elif kind == "log":
            logs.add(base)
        elif kind != "txnindex":  # the log's TxnIndex.load moves or drops orphans
            others.append((base, path))

    for base in sorted(swaps):
        swap = directory / f"{base:020d}.log{SWAP_SUFFIX}"
        end = _next_offset_of(swap)
        replaced = sorted(b for b in logs if b >= base and (end is None or b < end))
        log.warning(
            "%s: completing an interrupted segment swap (replacing segments %s)",
            swap,
            replaced,
        )
        for b in replaced:
            for ext in ("log", "index", "timeindex"):
                _unlink(directory / f"{b:020d}.{ext}")
            logs.discard(b)
        swap.rename(directory / f"{base:020d}.log")
        logs.add(base)
        # Its indexes are stale (or absent); force a rebuild.
        _unlink(directory / f"{base:020d}.index")
        _unlink(directory / f"{base:020d}.timeindex")

    for base, path in others:
        if base not in logs:
            _unlink(path)
    if swaps:
        fsync_directory(directory)
    return sorted(logs)


def remove_log_directory(directory: Path) -> None:
    """Rename to ``<name>.<id>-delete`` first, so a crash midway leaves no partition
    that looks live (leftovers are removed at the next open), then remove."""
    doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
    try:
        directory.rename(doomed)
    except FileNotFoundError:
        return
    with contextlib.suppress(OSError):
        fsync_directory(directory.parent)
    shutil.rmtree(doomed, ignore_errors=True)
