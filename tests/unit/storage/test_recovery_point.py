"""The recovery point: after an unclean stop every segment that may hold data not
known to be fsynced is checked, not only the newest; segments below the
checkpointed recovery point are trusted. New and renamed files are followed by
an fsync of their directory."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from faulty_disk import FaultyDisk
from storage_helpers import NOW, make_batch

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import iter_batches
from kgroups.storage.log_manager import RECOVERY_POINT_FILE, LogManager
from kgroups.storage.producer_snapshots import write_snapshot

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


def fill(manager: LogManager, batches: int = 40) -> None:
    plog = manager.create("t", 0, now_ms=NOW)
    for i in range(batches):
        plog.append(make_batch(2, value_size=30, timestamp=NOW + i), NOW)


def crash(manager: LogManager) -> None:
    """Drop the manager like kill -9: files closed, no flush, no marker."""
    for _topic, _partition, plog in manager.logs():
        for segment in plog.segments:
            segment.close()
    manager._logs.clear()
    os.close(manager._lock_fd)
    manager._lock_fd = -1


def corrupt_tail(path: Path) -> int:
    """Flip a bit in the last batch of a segment file; returns its position."""
    data = bytearray(path.read_bytes())
    *_, (pos, header) = iter_batches(bytes(data))
    data[pos + header.size - 5] ^= 0x01
    path.write_bytes(bytes(data))
    return pos


def test_a_corrupt_middle_segment_is_recovered_and_later_ones_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    fill(manager)
    crash(manager)
    logs = sorted((tmp_path / "t-0").glob("*.log"))
    assert len(logs) >= 4
    middle = logs[1]
    cut = corrupt_tail(middle)
    manager = LogManager(tmp_path, CONFIG)
    with caplog.at_level(logging.WARNING):
        manager.open_all(NOW)
    plog = manager.get("t", 0)
    assert plog is not None
    assert middle.name in caplog.text and "truncating" in caplog.text
    assert middle.stat().st_size == cut
    assert sorted((tmp_path / "t-0").glob("*.log")) == logs[:2]
    assert len(plog.segments) == 2
    end = plog.log_end_offset
    assert end == plog.segments[-1].next_offset < int(logs[2].name[:20])
    assert plog.append(make_batch(1), NOW).base_offset == end
    manager.close()


def test_segments_below_the_recovery_point_are_trusted(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    fill(manager)
    manager.close()  # clean: recovery point = log end, checkpointed
    text = (tmp_path / RECOVERY_POINT_FILE).read_text()
    assert text.splitlines()[:3] == ["0", "1", "t 0 80"]
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    plog = manager.get("t", 0)
    assert plog is not None
    for i in range(6):  # a few more segments after the recovery point
        plog.append(make_batch(8, value_size=30, timestamp=NOW + 100 + i), NOW)
    crash(manager)
    logs = sorted((tmp_path / "t-0").glob("*.log"))
    below = [p for p in logs if int(p.name[:20]) < 80]
    corrupt_tail(below[1])  # a flush said this was on disk: not checked
    corrupt_tail(logs[-2])  # after the recovery point: checked
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    plog = manager.get("t", 0)
    assert plog is not None
    assert sorted((tmp_path / "t-0").glob("*.log")) == logs[:-1]
    assert plog.segments[-1].base_offset == int(logs[-2].name[:20])
    manager.close()


def test_flush_advances_the_recovery_point_and_the_checkpoint_follows(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    fill(manager, 10)
    plog = manager.get("t", 0)
    assert plog is not None
    assert plog.flushes.recovery_point == 0
    assert manager.recovery_points() == {("t", 0): 0}
    plog.flush()
    assert plog.flushes.recovery_point == 20
    manager.write_recovery_points(manager.recovery_points())
    assert (tmp_path / RECOVERY_POINT_FILE).read_text() == "0\n1\nt 0 20\n"
    manager.close()


def test_truncation_lowers_the_recovery_point(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    fill(manager, 10)
    plog = manager.get("t", 0)
    assert plog is not None
    plog.flush()
    assert plog.flushes.recovery_point == 20
    plog.truncate_to(12)
    assert plog.flushes.recovery_point == plog.log_end_offset == 12
    manager.close()


def test_new_and_renamed_files_are_followed_by_a_directory_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FaultyDisk(monkeypatch, tmp_path)
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    plog = manager.create("t", 0, now_ms=NOW)
    assert tmp_path in disk.synced_directories  # the new partition directory's entry
    disk.synced_directories.clear()
    write_snapshot(plog.producers, plog.directory, 0)
    assert disk.synced_directories == [plog.directory]
    from kgroups.storage.cleaner_checkpoint import write_clean_offset

    disk.synced_directories.clear()
    write_clean_offset(plog.directory, 5)
    assert disk.synced_directories == [plog.directory]
    disk.synced_directories.clear()
    manager.write_recovery_points(manager.recovery_points())
    assert disk.synced_directories == [tmp_path]
    disk.synced_directories.clear()
    plog.segments[0].change_suffix(".deleted")
    assert disk.synced_directories == [plog.directory]
    plog.segments[0].change_suffix("")
    manager.close()


def test_the_producer_id_block_is_followed_by_a_directory_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgroups.runtime.producer_ids import ProducerIdManager

    disk = FaultyDisk(monkeypatch, tmp_path)
    ProducerIdManager(tmp_path).next_id()
    assert disk.synced_directories == [tmp_path]
