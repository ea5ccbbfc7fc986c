"""fsync of a partition log's files, safe on a worker thread while the loop appends,
and the bookkeeping of what is still to fsync.

When ``os.write`` returns the data is in the page cache: acknowledged produce
requests survive ``kill -9``. Surviving power loss needs an fsync, which the
flush policy (``flush.messages`` / ``flush.ms``) or the caller's own group-commit
decides.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from kgroups.durable import fsync_directory
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.append_file import AppendFile
from kgroups.storage.segment import Segment

__all__ = ["FlushState", "FlushingLog", "fsync_directory_if_present", "sync_segments"]


class FlushState:
    """What a log appended that is not yet fsynced, and its recovery point.

    Single-writer counters: the loop bumps the "appended" ones (``appended``,
    ``dir_changes``), the flusher sets the "flushed" ones, so neither needs a
    lock; the lock keeps two flushes of the same log apart.
    """

    __slots__ = (
        "_lock",
        "appended",
        "dir_changes",
        "dir_synced",
        "flushed",
        "oldest_unflushed_ms",
        "recovery_point",
    )

    def __init__(self, recovery_point: int) -> None:
        self.appended = 0
        self.flushed = 0
        self.oldest_unflushed_ms = 0
        # Files created, renamed or deleted, and how many of those a directory
        # fsync covered.
        self.dir_changes = 0
        self.dir_synced = 0
        self._lock = threading.Lock()
        # Everything below this offset is known to be fsynced.
        self.recovery_point = recovery_point

    def add(self, messages: int, now_ms: int) -> None:
        """The loop appended ``messages`` records at ``now_ms``."""
        if self.appended == self.flushed:
            self.oldest_unflushed_ms = now_ms
        self.appended += messages

    @property
    def unflushed(self) -> int:
        return self.appended - self.flushed

    def is_due(self, now_ms: int, flush_messages: int, flush_ms: int) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` says to fsync now."""
        unflushed = self.appended - self.flushed
        return unflushed > 0 and (
            unflushed >= flush_messages or now_ms - self.oldest_unflushed_ms >= flush_ms
        )

    def sync(
        self,
        segments: Sequence[Segment],
        directory: Path,
        log_end: Callable[[], int],
        failed: Callable[[OSError], Exception],
        *,
        all_files: bool,
    ) -> None:
        """fsync the segments (and the directory if files changed), then count
        what was appended before as flushed. ``failed`` makes the exception to
        raise for an fsync error, under the lock."""
        with self._lock:
            appended = self.appended
            end = log_end()
            dir_changes = self.dir_changes
            try:
                sync_segments(list(segments), all_files=all_files)
                if dir_changes != self.dir_synced:
                    fsync_directory_if_present(directory)
                    self.dir_synced = dir_changes
            except OSError as exc:
                raise failed(exc) from exc
            self.flushed = appended
            # min: a truncation may have moved the end down meanwhile.
            self.recovery_point = max(self.recovery_point, min(end, log_end()))


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


class FlushingLog:
    """A partition log's fsync and flush policy; ``SegmentLog`` mixes it in
    and has what it declares."""

    directory: Path
    config: LogConfig
    flushes: FlushState
    _segments: list[Segment]
    _next_offset: int
    _offline: bool

    def _check_open(self) -> None:
        raise NotImplementedError

    def _take_offline(self, reason: str) -> None:
        raise NotImplementedError

    @property
    def rolled_since_flush(self) -> bool:
        """Files were created, renamed or deleted since the last flush."""
        return self.flushes.dir_changes != self.flushes.dir_synced

    def needs_flush(self, now_ms: int) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` says to fsync now."""
        config = self.config
        return not self._offline and self.flushes.is_due(
            now_ms, config.flush_messages, config.flush_ms
        )

    def flush(self) -> None:
        """fsync everything appended so far (not the active segment's indexes:
        recovery rebuilds them); safe on a worker thread. A failed fsync takes the
        log offline: the kernel may have dropped the pages it could not write, so
        what was appended is no longer known to be stored (as Kafka's log
        directory failure)."""
        self._sync(all_files=False)

    def _sync(self, *, all_files: bool) -> None:
        if self._offline:
            self._check_open()
        end = lambda: self._next_offset  # noqa: E731 - read when the fsync is done
        self.flushes.sync(
            self._segments, self.directory, end, self._flush_failed, all_files=all_files
        )

    def _flush_failed(self, exc: OSError) -> KafkaError:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):  # no descriptor: try later
            self._take_offline(f"fsync failed: {exc}")
        return KafkaError(ErrorCode.kafka_storage_error, f"flush of {self.directory} failed: {exc}")
