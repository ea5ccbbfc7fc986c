"""A file that grows only at its end, written through an unbuffered descriptor.

Every append is one ``os.write`` on an ``O_APPEND`` descriptor, so once it returns
the bytes are in the OS page cache and survive ``kill -9`` of the broker; an
``fsync`` (``sync``) makes them survive a power loss too.

Flushing runs on worker threads while the event loop keeps appending, rolling and
deleting. A flusher never fsyncs the live descriptor: it takes a ``dup()`` under a
lock that ``close()`` also takes, so a descriptor number can never be closed and
reused under it. Write counters are single-writer (the loop bumps ``writes``, the
flusher sets ``synced``), so comparing them needs no lock.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.file_region import RegionGone

__all__ = ["AppendFile", "StorageOffline"]

_FD_LOCK = threading.Lock()
_FLAGS = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)


class StorageOffline(KafkaError):
    """A failed write could not be undone: the file no longer matches what its
    owner believes, so the owner must stop using it (Kafka's log directory failure)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.kafka_storage_error, message)


class AppendFile:
    __slots__ = ("fd", "path", "size", "synced", "writes")

    def __init__(self, path: Path, fd: int, size: int) -> None:
        self.path = path
        self.fd = fd
        self.size = size
        self.writes = 0
        self.synced = 0

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> AppendFile:
        flags = _FLAGS | (os.O_CREAT if create else 0)
        fd = os.open(path, flags, 0o644)
        try:
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        f = cls(path, fd, size)
        if create and size == 0:
            # A new file: its directory entry needs a sync too.
            f.writes = 1
        return f

    @property
    def closed(self) -> bool:
        return self.fd < 0

    @property
    def dirty(self) -> bool:
        return self.writes != self.synced

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end; returns the position it starts at.

        A failed or short write is undone, so the file never keeps half an append;
        if even that fails, StorageOffline.
        """
        position = self.size
        n = len(data)
        try:
            written = os.write(self.fd, data)
            while written < n:
                written += os.write(self.fd, memoryview(data)[written:])
        except OSError as exc:
            try:
                os.ftruncate(self.fd, position)
            except OSError as undo_exc:
                raise StorageOffline(
                    f"write to {self.path} failed ({exc}) and cannot be undone: {undo_exc}"
                ) from exc
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"write to {self.path} failed: {exc}"
            ) from exc
        self.size = position + n
        self.writes += 1
        return position

    def pread(self, n: int, position: int) -> bytes:
        return os.pread(self.fd, n, position)

    def send_to(self, out_fd: int, position: int, count: int) -> int:
        """``os.sendfile`` of up to ``count`` bytes from ``position`` to ``out_fd``
        (a fetch's records, see records/file_region.py). Under the lock that
        ``close()`` takes: the descriptor cannot be closed and reused meanwhile."""
        with _FD_LOCK:
            if self.fd < 0:
                raise RegionGone(f"{self.path} was closed")
            return os.sendfile(out_fd, self.fd, position, count)

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fd, size)
        self.size = size
        self.writes += 1

    def dup_for_sync(self) -> tuple[int, int] | None:
        """``(descriptor copy, writes covered)`` if unsynced, else ``None``."""
        with _FD_LOCK:
            if self.fd < 0 or self.writes == self.synced:
                return None
            return os.dup(self.fd), self.writes

    def sync(self) -> None:
        """fsync now, from any thread."""
        job = self.dup_for_sync()
        if job is None:
            return
        fd, writes = job
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.synced = writes

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path
        self.writes += 1

    def close(self) -> None:
        with _FD_LOCK:
            fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
