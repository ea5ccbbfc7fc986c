"""fsync of a partition log's files, safe on a worker thread while the loop appends.

When ``os.write`` returns the data is in the page cache: acknowledged produce
requests survive ``kill -9``. Surviving power loss needs an fsync, which the
flush policy (``flush.messages`` / ``flush.ms``) or the caller's own group-commit
decides.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from kgroups.storage.append_file import AppendFile
from kgroups.storage.durable import fsync_directory
from kgroups.storage.segment import Segment

__all__ = ["fsync_directory_if_present", "sync_segments"]


def sync_segments(segments: Sequence[Segment], *, all_files: bool) -> None:
    """fdatasync what was appended to the segments' files since their last sync.

    The last (active) segment's indexes are left out unless ``all_files``:
    recovery rebuilds them anyway.
    """
    files: list[AppendFile] = []
    for segment in segments:
        if all_files or segment is not segments[-1]:
            files.extend(segment.files())
        else:
            files.append(segment.log)
    jobs: list[tuple[AppendFile, int, int]] = []
    try:
        for f in files:
            job = f.dup_for_sync()
            if job is not None:
                jobs.append((f, *job))
        for f, fd, writes in jobs:
            # Appends only: fdatasync flushes the data and the size
            # needed to read it back, without the timestamps.
            os.fdatasync(fd)
            f.synced = writes
    finally:
        for _f, fd, _w in jobs:
            os.close(fd)


def fsync_directory_if_present(directory: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # deleted meanwhile (topic deletion)
        fsync_directory(directory)
