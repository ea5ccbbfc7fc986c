"""A log start moved within a segment (DeleteRecords): reads and timestamps
start there, retention deletes the whole segments before it whatever the
cleanup policy, truncation and opening keep it consistent with the log end."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.log import SegmentLog
from kgroups.storage.log_manager import LOG_START_FILE, LogManager

# Two batches of two records per segment.
CONFIG = LogConfig(segment_bytes=300, cleanup_policy="compact")


def _log(directory: Path, batches: int = 6) -> SegmentLog:
    plog = SegmentLog.open(directory, CONFIG, NOW)
    for i in range(batches):
        plog.append(make_batch(2, value_size=30, timestamp=NOW + i), NOW)
    return plog


def test_the_start_moves_forward_within_a_segment_and_never_back(tmp_path: Path) -> None:
    plog = _log(tmp_path / "t-0")
    assert [s.base_offset for s in plog.segments][:2] == [0, 4]
    assert plog.advance_log_start(5)
    assert plog.log_start_offset == 5
    assert not plog.advance_log_start(3)
    assert plog.log_start_offset == 5
    with pytest.raises(KafkaError) as exc:
        plog.read(4, 1000)
    assert exc.value.error_code == ErrorCode.offset_out_of_range
    assert plog.read(5, 1000)  # the batch holding 5, from 4: the client skips 4
    # The first record at or after the start with a timestamp at or after NOW.
    found = plog.offset_for_timestamp(NOW)
    assert found is not None and found.offset == 5
    with pytest.raises(KafkaError) as exc:
        plog.advance_log_start(plog.high_watermark + 1)
    assert exc.value.error_code == ErrorCode.offset_out_of_range
    assert plog.log_start_offset == 5


def test_retention_deletes_the_segments_before_the_start_whatever_the_policy(
    tmp_path: Path,
) -> None:
    plog = _log(tmp_path / "t-0")
    bases = [s.base_offset for s in plog.segments]
    assert bases[:3] == [0, 4, 8]
    plog.advance_log_start(9)
    assert plog.apply_retention(NOW) == 2  # [0, 4) and [4, 8); [8, 12) holds the start
    assert plog.segments[0].base_offset == 8
    assert plog.log_start_offset == 9


def test_truncation_below_the_start_and_opening_past_the_end(tmp_path: Path) -> None:
    plog = _log(tmp_path / "t-0")
    plog.advance_log_start(10)
    plog.truncate_to(6)
    assert (plog.log_start_offset, plog.log_end_offset) == (
        6,
        6,
    )  # as Kafka's truncateFullyAndStartAt
    plog.close()
    # A checkpointed start past what the files hold: the log restarts empty there.
    again = SegmentLog.open(tmp_path / "t-0", CONFIG, NOW, log_start=20)
    assert (again.log_start_offset, again.log_end_offset) == (20, 20)
    assert again.append(make_batch(1), NOW).base_offset == 20
    again.close()


def test_the_manager_checkpoints_moved_starts_only(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, CONFIG)
    manager.open_all(NOW)
    for p in range(2):
        plog = manager.create("t", p, CONFIG, NOW)
        for i in range(3):
            plog.append(make_batch(2, timestamp=NOW + i), NOW)
    manager.get("t", 1).advance_log_start(3)  # type: ignore[union-attr]
    manager.write_log_starts(manager.log_starts())
    assert (tmp_path / LOG_START_FILE).read_text() == "0\n1\nt 1 3\n"
    manager.close()
    reopened = LogManager(tmp_path, CONFIG)
    reopened.open_all(NOW)
    assert [reopened.get("t", p).log_start_offset for p in range(2)] == [0, 3]  # type: ignore[union-attr]
    reopened.close()
