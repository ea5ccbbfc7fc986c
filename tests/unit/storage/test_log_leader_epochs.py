"""The leader epochs a local log knows are those its batches carry, learnt
from the segments the first time they are asked for, and the epoch it is
opened at, from its log end."""

from __future__ import annotations

from pathlib import Path

from storage_helpers import NOW, make_batch

from kgroups.partitions.config import LogConfig
from kgroups.partitions.leader_epochs import UNDEFINED_EPOCH_END
from kgroups.records.batch import iter_batches, read_header
from kgroups.storage.log import SegmentLog

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def at_epoch(directory: Path, epoch: int, batches: int, config: LogConfig = SMALL) -> SegmentLog:
    """The log reopened at leader ``epoch``, ``batches`` batches appended at it."""
    plog = SegmentLog.open(directory, config, NOW, leader_epoch=epoch)
    for i in range(batches):
        plog.append(make_batch(3, value_size=60, timestamp=NOW + plog.log_end_offset + i), NOW)
    return plog


def test_a_log_at_epoch_zero_answers_its_log_end_for_zero(tmp_path: Path) -> None:
    plog = at_epoch(tmp_path / "t-0", 0, 0)
    assert plog.end_offset_for_epoch(0) == (0, 0)
    assert plog.log_start_epoch() == 0
    plog.append(make_batch(4), NOW)
    assert plog.end_offset_for_epoch(0) == (0, 4)
    assert plog.end_offset_for_epoch(1) == UNDEFINED_EPOCH_END
    assert plog.end_offset_for_epoch(-1) == UNDEFINED_EPOCH_END
    plog.close()


def test_epochs_written_before_are_read_back_from_the_batches(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 2, 20).close()
    plog = at_epoch(directory, 5, 20)
    five_starts = 60
    assert len(plog.segments) > 4
    assert plog.end_offset_for_epoch(2) == (2, five_starts)
    assert plog.end_offset_for_epoch(3) == (2, five_starts)
    assert plog.end_offset_for_epoch(4) == (2, five_starts)
    assert plog.end_offset_for_epoch(1) == (1, 0)
    assert plog.end_offset_for_epoch(5) == (5, plog.log_end_offset)
    assert plog.end_offset_for_epoch(6) == UNDEFINED_EPOCH_END
    assert plog.log_start_epoch() == 2
    # Appends at the log's own epoch move its end, nothing else.
    plog.append(make_batch(2), NOW)
    assert plog.end_offset_for_epoch(5) == (5, plog.log_end_offset)
    assert plog.end_offset_for_epoch(2) == (2, five_starts)
    plog.close()


def test_an_epoch_that_begins_and_ends_within_one_segment_is_found(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    big = LogConfig(segment_bytes=1 << 20)
    at_epoch(directory, 1, 3, big).close()
    at_epoch(directory, 4, 2, big).close()
    plog = at_epoch(directory, 7, 3, big)
    assert len(plog.segments) == 1
    assert plog.end_offset_for_epoch(1) == (1, 9)
    assert plog.end_offset_for_epoch(4) == (4, 15)
    assert plog.end_offset_for_epoch(6) == (4, 15)
    assert plog.end_offset_for_epoch(7) == (7, 24)
    plog.close()


def test_an_epoch_with_no_batch_is_not_known(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 1, 3).close()
    at_epoch(directory, 2, 0).close()  # led at 2, nothing written
    plog = at_epoch(directory, 3, 3)
    assert plog.end_offset_for_epoch(2) == (1, 9)
    assert plog.end_offset_for_epoch(1) == (1, 9)
    plog.close()


def test_retention_moves_the_first_epoch_to_the_new_log_start(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 2, 20).close()
    plog = at_epoch(directory, 5, 20)
    assert plog.end_offset_for_epoch(2) == (2, 60)  # learnt before the deletion
    config = LogConfig(segment_bytes=2000, index_interval_bytes=200, retention_bytes=1500)
    plog.update_config(config)
    plog.apply_retention(NOW)
    start = plog.log_start_offset
    assert start > 60
    assert plog.end_offset_for_epoch(2) == (2, start)
    assert plog.end_offset_for_epoch(5) == (5, plog.log_end_offset)
    assert plog.log_start_epoch() == 5
    plog.close()


def test_truncation_forgets_what_was_cut_off(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 2, 5).close()
    plog = at_epoch(directory, 5, 5)
    assert plog.end_offset_for_epoch(2) == (2, 15)
    plog.truncate_to(9)
    assert plog.log_end_offset == 9
    assert plog.end_offset_for_epoch(2) == (2, 9)
    assert plog.end_offset_for_epoch(5) == (5, 9)
    plog.close()


def test_a_reopened_log_knows_the_same_epochs(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 2, 10).close()
    at_epoch(directory, 5, 10).close()
    plog = SegmentLog.open(directory, SMALL, NOW, leader_epoch=5, recover=False)
    assert plog.end_offset_for_epoch(2) == (2, 30)
    assert plog.end_offset_for_epoch(5) == (5, 60)
    plog.close()


def test_lookups_by_time_answer_the_epoch_of_the_batch_found(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    at_epoch(directory, 2, 4).close()
    plog = at_epoch(directory, 5, 4)
    data = plog.read(0, 1 << 20)
    first = read_header(data)
    found = plog.offset_for_timestamp(first.base_timestamp)
    assert found is not None and (found.offset, found.leader_epoch) == (0, 2)
    newest = plog.max_timestamp_offset()
    last = [h for _pos, h in iter_batches(data)][-1]
    assert newest is not None and newest.leader_epoch == last.partition_leader_epoch == 5
    plog.close()
