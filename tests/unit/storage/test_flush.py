"""Flush policy, and fsync from a worker thread while the loop appends."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch

from kgroups.partitions.config import LogConfig
from kgroups.storage.log import SegmentLog


def test_flush_messages_policy(tmp_path: Path) -> None:
    plog = SegmentLog.open(tmp_path / "t-0", LogConfig(flush_messages=5), NOW)
    assert not plog.needs_flush(NOW)
    plog.append(make_batch(4), NOW)
    assert not plog.needs_flush(NOW)
    plog.append(make_batch(1), NOW)
    assert plog.needs_flush(NOW)
    plog.flush()
    assert not plog.needs_flush(NOW) and plog.flushes.unflushed == 0
    plog.close()


def test_flush_ms_policy_counts_from_the_oldest_unflushed_append(tmp_path: Path) -> None:
    plog = SegmentLog.open(tmp_path / "t-0", LogConfig(flush_ms=1000), NOW)
    assert not plog.needs_flush(NOW + 10_000)  # nothing to flush
    plog.append(make_batch(1), NOW)
    plog.append(make_batch(1), NOW + 900)
    assert not plog.needs_flush(NOW + 999)
    assert plog.needs_flush(NOW + 1000)
    plog.flush()
    plog.append(make_batch(1), NOW + 2000)
    assert not plog.needs_flush(NOW + 2999)
    assert plog.needs_flush(NOW + 3000)
    plog.close()


def test_flush_syncs_written_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "fdatasync", recording_fsync)  # segment data
    plog = SegmentLog.open(tmp_path / "t-0", LogConfig(segment_bytes=500), NOW)
    plog.flush()
    synced.clear()
    plog.append(make_batch(1), NOW)
    plog.flush()
    assert synced == [f"{0:020d}.log"]
    synced.clear()
    plog.flush()
    assert synced == []  # nothing new
    for _ in range(10):
        plog.append(make_batch(3, value_size=40), NOW)
    plog.flush()
    assert f"{0:020d}.log" in synced and f"{0:020d}.index" in synced
    assert "t-0" in synced  # new segment files: the directory entry too
    plog.close()


def test_flush_from_a_thread_while_appending_rolling_and_deleting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in fsync that takes a while (releasing the GIL, as the real one does)
    # and fails on a descriptor closed (or closed and reused) under it. Real fsyncs
    # of a directory churning with tiny segments would only make this test slow.
    def slow_fsync(fd: int) -> None:
        before = os.fstat(fd).st_ino
        time.sleep(0.0002)
        if os.fstat(fd).st_ino != before:
            raise OSError(f"descriptor {fd} was closed and reused during fsync")

    monkeypatch.setattr(os, "fsync", slow_fsync)
    monkeypatch.setattr(os, "fdatasync", slow_fsync)
    # Every append rolls, and retention deletes every segment but the active one.
    config = LogConfig(segment_bytes=200, retention_bytes=0, index_interval_bytes=50)
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    stop = threading.Event()
    errors: list[BaseException] = []
    flushes = 0

    def flusher() -> None:
        nonlocal flushes
        try:
            while not stop.is_set():
                plog.flush()
                flushes += 1
                time.sleep(0)  # let the appending thread have the GIL between flushes
        except BaseException as exc:  # the test fails on any error, reported below
            errors.append(exc)

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for _ in range(500):
            plog.append(make_batch(2, value_size=30), NOW)
            plog.apply_retention(NOW)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert flushes > 1
    plog.flush()
    assert plog.flushes.unflushed == 0
    assert plog.log_end_offset == 1000
    plog.close()
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    assert plog.log_end_offset == 1000
    assert plog.log_start_offset == 1000  # retention.bytes=0 leaves nothing
    plog.close()
