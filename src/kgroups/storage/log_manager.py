"""All partition logs of one log directory.

Each partition lives in ``<log dir>/<topic>-<partition>``; topic names may contain
dashes and dots, so the partition number is whatever follows the *last* dash.
A deleted partition's directory is first renamed ``<topic>-<partition>.<id>-delete``
(Kafka's convention), then removed, so a crash in between leaves nothing that
looks like a live partition; leftovers are removed at the next open.

Creating a topic's partitions (``create_partitions``) and removing a deleted
topic's directories (``remove_directories``) touch no shared state, so they run
on a worker thread; the logs join or leave the manager on the loop (``adopt``,
``detach``). Creation is all or nothing: on failure (say EMFILE at the 500th
partition) the partitions made so far are closed and removed. A partition
directory of a topic the registry does not list (what a crash during creation
or deletion leaves) is not opened: it is renamed ``<dir>.<id>-stray`` and kept.

A clean ``close()`` leaves a ``cleanly_shutdown`` marker; the next open consumes it
and skips re-checking segments batch by batch. Otherwise each log is recovered
from its recovery point (the log end at its last successful fsync), read from
``recovery-point-offset-checkpoint``, Kafka's file of that name and format: a
version line ``0``, a count, then ``<topic> <partition> <offset>`` lines. It is
rewritten at a clean close and periodically (``write_recovery_points``); a log
missing from it is recovered whole. The log starts that DeleteRecords moved
within a segment are in ``log-start-offset-checkpoint`` (same format), written
before DeleteRecords is answered, at a clean close, and when a topic is deleted
(so a topic created again under its name starts at 0). The directory is locked
(``.lock``, flock) so two brokers can never share it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from kgroups.clock import Clock, SystemClock
from kgroups.durable import replace_file
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.cleanable import CleanPlan, plan_cleaning
from kgroups.storage.log import SegmentLog
from kgroups.storage.log_files import DELETE_DIR_SUFFIX, remove_log_directory
from kgroups.storage.offset_checkpoint import read_checkpoint, write_checkpoint

__all__ = ["LOG_START_FILE", "RECOVERY_POINT_FILE", "LogManager", "parse_partition_dir"]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = "cleanly_shutdown"
RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
LOCK_FILE = ".lock"
STRAY_DIR_SUFFIX = "-stray"
_DELETE_DIR = re.compile(r"^.+\.[0-9a-f]{32}" + re.escape(DELETE_DIR_SUFFIX) + "$")


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``("my.topic-name", 3)`` from ``"my.topic-name-3"``; None if not a partition."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit() or name.startswith("."):
        return None
    if partition != str(int(partition)):
        return None
    return topic, int(partition)


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class LogManager:
    def __init__(
        self, log_dir: Path, default_config: LogConfig, clock: Clock | None = None
    ) -> None:
        self.log_dir = log_dir
        self.default_config = default_config
        self._clock = clock or SystemClock()
        self._logs: dict[tuple[str, int], SegmentLog] = {}
        self._lock_fd = -1
        # The periodic checkpoint runs on a worker thread; close() writes one too.
        self._checkpoint_lock = threading.Lock()
        self._log_start_lock = threading.Lock()

    def _lock(self) -> None:
        if self._lock_fd >= 0:
            return
        self.log_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.log_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise KafkaError(
                ErrorCode.kafka_storage_error,
                f"log directory {self.log_dir} is in use by another process",
            ) from exc
        self._lock_fd = fd

    def open_all(
        self,
        now_ms: int,
        configs: Mapping[str, LogConfig] | None = None,
        registered: Callable[[str, int], bool] | None = None,
    ) -> None:
        """Open every partition found in the log directory (may take a while).

        ``configs`` maps topic names to their configs; others get the default.
        Partitions for which ``registered(topic, partition)`` is false are set
        aside as strays instead.
        """
        self._lock()
        marker = self.log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery_points = {} if clean else self._read_recovery_points()
        log_starts = read_checkpoint(self.log_dir / LOG_START_FILE)
        for path in sorted(self.log_dir.iterdir()):
            if not path.is_dir():
                continue
            if _DELETE_DIR.match(path.name):
                shutil.rmtree(path, ignore_errors=True)
                continue
            parsed = parse_partition_dir(path.name)
            if parsed is None or parsed in self._logs:
                continue
            topic, partition = parsed
            if registered is not None and not registered(topic, partition):
                stray = path.with_name(f"{path.name}.{uuid.uuid4().hex}{STRAY_DIR_SUFFIX}")
                path.rename(stray)
                log.warning(
                    "%s belongs to no topic (left by a crash while creating or deleting "
                    "one?): renamed %s; remove it when not needed",
                    path.name,
                    stray.name,
                )
                continue
            config = (configs or {}).get(topic, self.default_config)
            self._logs[parsed] = SegmentLog.open(
                path,
                config,
                now_ms,
                recover=not clean,
                recovery_point=recovery_points.get(parsed, 0),
                log_start=log_starts.get(parsed, 0),
            )
        if log_starts != self.log_starts():  # entries of deleted topics go
            self.write_log_starts(self.log_starts())
        # From here on a crash must trigger recovery again.
        with contextlib.suppress(FileNotFoundError):
            marker.unlink()
        log.info(
            "opened %d partition log(s) in %s%s",
            len(self._logs),
            self.log_dir,
            " after a clean shutdown" if clean else "",
        )

    def _read_recovery_points(self) -> dict[tuple[str, int], int]:
        """The checkpointed recovery points; anything unreadable counts as 0 (recover all)."""
        return read_checkpoint(self.log_dir / RECOVERY_POINT_FILE)

    def recovery_points(self) -> dict[tuple[str, int], int]:
        """Every open log's recovery point (taken on the loop; write off it)."""
        return {key: plog.flushes.recovery_point for key, plog in self._logs.items()}

    def write_recovery_points(self, points: Mapping[tuple[str, int], int]) -> None:
        """Replace ``recovery-point-offset-checkpoint`` (fsynced, atomically)."""
        with self._checkpoint_lock:
            write_checkpoint(self.log_dir / RECOVERY_POINT_FILE, points)

    def log_starts(self) -> dict[tuple[str, int], int]:
        """The log starts that are not their first segment's base (DeleteRecords
        moved them), taken on the loop; write them off it."""
        return {
            key: plog.log_start_offset
            for key, plog in self._logs.items()
            if plog.log_start_offset > plog.segments[0].base_offset
        }

    def write_log_starts(self, points: Mapping[tuple[str, int], int]) -> None:
        """Replace ``log-start-offset-checkpoint`` (fsynced, atomically)."""
        with self._log_start_lock:
            write_checkpoint(self.log_dir / LOG_START_FILE, points)

    def get(self, topic: str, partition: int) -> SegmentLog | None:
        return self._logs.get((topic, partition))

    def create(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        now_ms: int | None = None,
    ) -> SegmentLog:
        """Open the partition's log, creating it if new (an open one is returned as is)."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            return existing
        self._lock()
        directory = self.log_dir / partition_dir_name(topic, partition)
        partition_log = SegmentLog.open(
            directory,
            config or self.default_config,
            self._clock.now_ms() if now_ms is None else now_ms,
        )
        self._logs[(topic, partition)] = partition_log
        return partition_log

    def create_partitions(
        self, topic: str, count: int, config: LogConfig, now_ms: int, first: int = 0
    ) -> list[SegmentLog]:
        """Create the logs of a topic's partitions first..count-1 (a new topic's,
        or those CreatePartitions adds), all or none.

        The logs are not registered (see ``adopt``); safe on a worker thread.
        On failure the partitions made so far are closed and removed, and the
        error raised.
        """
        created: list[SegmentLog] = []
        try:
            for p in range(first, count):
                directory = self.log_dir / partition_dir_name(topic, p)
                created.append(SegmentLog.open(directory, config, now_ms))
        except BaseException:
            for partition_log in created:
                partition_log.delete()
            # The partition that failed midway may have left a directory too.
            failed = first + len(created)
            remove_log_directory(self.log_dir / partition_dir_name(topic, failed))
            raise
        return created

    def adopt(self, topic: str, logs: Sequence[SegmentLog], first: int = 0) -> None:
        """Register logs from ``create_partitions`` as partitions first.. of ``topic``."""
        for p, partition_log in enumerate(logs, first):
            self._logs[(topic, p)] = partition_log

    def detach(self, topic: str, count: int) -> list[Path]:
        """Close and forget partitions 0..count-1 of a deleted topic; returns their
        directories, for ``remove_directories`` (off the loop)."""
        directories = []
        for p in range(count):
            partition_log = self._logs.pop((topic, p), None)
            if partition_log is not None:
                partition_log.abandon()
            directories.append(self.log_dir / partition_dir_name(topic, p))
        return directories

    @staticmethod
    def remove_directories(directories: Sequence[Path]) -> None:
        """Remove detached partition directories; safe on a worker thread."""
        for directory in directories:
            try:
                remove_log_directory(directory)
            except OSError as exc:  # leftovers are removed at the next start
                log.error("cannot remove %s: %s", directory, exc)

    def delete(self, topic: str, partition: int) -> bool:
        """Remove the partition's log and files; False if there was none."""
        partition_log = self._logs.pop((topic, partition), None)
        if partition_log is not None:
            partition_log.delete()
            return True
        directory = self.log_dir / partition_dir_name(topic, partition)
        if not directory.is_dir():
            return False
        remove_log_directory(directory)
        return True

    def logs(self) -> Iterator[tuple[str, int, SegmentLog]]:
        """``(topic, partition, log)`` for every open log."""
        for (topic, partition), partition_log in list(self._logs.items()):
            yield topic, partition, partition_log

    def __len__(self) -> int:
        return len(self._logs)

    def flush_due(self, now_ms: int) -> list[SegmentLog]:
        """Logs whose flush policy says to fsync now (flush them off the loop)."""
        return [pl for pl in self._logs.values() if pl.needs_flush(now_ms)]

    def apply_retention(self, now_ms: int) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        deleted = 0
        for (topic, partition), partition_log in list(self._logs.items()):
            try:
                deleted += partition_log.apply_retention(now_ms)
            except (OSError, KafkaError) as exc:
                log.error("retention failed for %s-%d: %s", topic, partition, exc)
        return deleted

    def take_retired_files(self) -> list[Path]:
        """Files retention has retired in every log (see ``remove_retired_files``)."""
        files = []
        for partition_log in list(self._logs.values()):
            files += partition_log.take_retired_files()
        return files

    @staticmethod
    def remove_retired_files(files: Sequence[Path]) -> None:
        """Unlink retired segment files; safe on a worker thread."""
        for path in files:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:  # the next open removes it
                log.error("cannot remove %s: %s", path, exc)

    def cleanable_logs(self, now_ms: int) -> list[CleanPlan]:
        """Plans for the compacted logs worth cleaning now, dirtiest first (see
        ``cleaner`` for running them)."""
        plans = []
        for (topic, partition), partition_log in list(self._logs.items()):
            try:
                plan = plan_cleaning(partition_log, now_ms)
            except (OSError, KafkaError) as exc:
                log.error("cannot plan cleaning of %s-%d: %s", topic, partition, exc)
                continue
            if plan is not None:
                plans.append(plan)
        plans.sort(key=lambda plan: plan.dirty_ratio, reverse=True)
        return plans

    def close(self) -> None:
        """Close every log (fsync included) and mark the shutdown clean."""
        failed = False
        for (topic, partition), partition_log in list(self._logs.items()):
            try:
                partition_log.close()
            except (OSError, KafkaError) as exc:
                failed = True
                log.error("closing %s-%d failed: %s", topic, partition, exc)
        points, starts = self.recovery_points(), self.log_starts()
        self._logs.clear()
        if self._lock_fd < 0:
            return
        try:
            self.write_recovery_points(points)
            self.write_log_starts(starts)
            if not failed:
                replace_file(self.log_dir / CLEAN_SHUTDOWN_FILE, b"")
        except OSError as exc:
            log.error("cannot checkpoint %s, the next start recovers: %s", self.log_dir, exc)
        os.close(self._lock_fd)
        self._lock_fd = -1
