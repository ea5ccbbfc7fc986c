"""When a log gets cleaned: checkpoint, dirty ratio, compaction lags, the log manager."""

from __future__ import annotations

from pathlib import Path

import pytest
from compaction_helpers import (
    COMPACT,
    HOUR,
    all_records,
    clean,
    key_values,
    open_compacted,
    roll,
    write_segments,
)
from storage_helpers import NOW

from kgroups.partitions.config import LogConfig
from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.cleaner_checkpoint import (
    CHECKPOINT_FILE,
    read_clean_offset,
    write_clean_offset,
)
from kgroups.storage.log_manager import LogManager


def test_the_checkpoint_survives_a_restart_and_limits_the_next_round(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    write_segments(plog, [[(b"k%d" % (i % 20), b"v") for i in range(100)]] * 2)
    active = roll(plog, 2)
    clean(plog)
    assert read_clean_offset(d) == active
    assert (d / CHECKPOINT_FILE).read_text() == f"0\n{active}\n"
    plog.close()

    plog = open_compacted(d)
    assert plan_cleaning(plog, NOW) is None  # nothing dirty
    # New data: only its keys are mapped, starting at the checkpoint.
    write_segments(plog, [[], [], [], [(b"k1", b"w"), (b"k2", b"w"), (b"new", b"w")]])
    end = roll(plog, 4)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    assert (plan.first_dirty, plan.first_uncleanable) == (active, end)
    result = LogCleaner().clean(plan)
    assert result.stats.map_entries == 4  # roll, k1, k2, new
    assert result.commit()
    assert read_clean_offset(d) == end
    assert [r.key for r in all_records(plog)].count(b"k1") == 1
    plog.close()


def test_truncation_lowers_the_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    write_segments(plog, [[(b"a", b"1"), (b"b", b"1")], [(b"c", b"1"), (b"d", b"1")]])
    roll(plog, 2)
    clean(plog)
    assert read_clean_offset(d) == 4
    plog.truncate_to(3)
    assert read_clean_offset(d) == plog.log_end_offset == 3
    write_segments(plog, [[], [], [], [(b"e", b"1")]])
    roll(plog, 4)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None and plan.first_dirty == 3
    plog.close()


@pytest.mark.parametrize("stored", ["0\n999\n", "garbage", "1\n2\n"])
def test_a_bad_or_out_of_range_checkpoint_means_everything_is_dirty(
    tmp_path: Path, stored: str
) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    write_segments(plog, [[(b"a", b"1")], [(b"a", b"2")]])
    roll(plog, 2)
    (d / CHECKPOINT_FILE).write_text(stored)
    plan = plan_cleaning(plog, NOW)
    assert plan is not None and plan.first_dirty == 0
    plog.close()


def test_min_cleanable_dirty_ratio(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    write_segments(plog, [[(b"k%d" % i, b"v" * 50) for i in range(30)]])  # all live
    roll(plog, 1)
    clean(plog)
    write_segments(plog, [[], [], [(b"k%d" % i, b"w" * 50) for i in range(10)]])
    roll(plog, 3)
    # Dirty: the segment the first round's roll started, and the new one.
    clean_bytes = plog.segments[0].size
    dirty_bytes = plog.segments[1].size + plog.segments[2].size
    assert plan_cleaning(plog, NOW) is None  # about 0.25 < 0.5
    plog.update_config(COMPACT.with_overrides({"min.cleanable.dirty.ratio": "0.2"}))
    plan = plan_cleaning(plog, NOW)
    assert plan is not None
    assert plan.dirty_ratio == pytest.approx(dirty_bytes / (clean_bytes + dirty_bytes))
    assert 0.2 < plan.dirty_ratio < 0.5
    plog.close()


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path: Path) -> None:
    config = COMPACT.with_overrides({"min.compaction.lag.ms": str(3 * HOUR)})
    plog = open_compacted(tmp_path / "t-0", config)
    bases = write_segments(
        plog, [[(b"a", b"1"), (b"a", b"2")], [(b"a", b"3")], [(b"a", b"4"), (b"a", b"5")]]
    )
    roll(plog, 3)
    # Segment 2's records are at NOW + 4h: younger than 3 hours until NOW + 7h.
    plan = plan_cleaning(plog, NOW + 7 * HOUR)
    assert plan is not None and plan.first_uncleanable == bases[2]
    result = LogCleaner().clean(plan)
    assert result.commit()
    assert [(o, v) for o, _k, v in key_values(all_records(plog))][:3] == [
        (2, b"3"),
        (3, b"4"),
        (4, b"5"),
    ]
    plan = plan_cleaning(plog, NOW + 7 * HOUR + 1)
    assert plan is not None and plan.first_uncleanable == plog.segments[-1].base_offset
    plog.close()


def test_max_compaction_lag_forces_a_clean_below_the_ratio(tmp_path: Path) -> None:
    config = COMPACT.with_overrides({"max.compaction.lag.ms": str(10 * HOUR)})
    plog = open_compacted(tmp_path / "t-0", config)
    write_segments(plog, [[(b"k%d" % i, b"v" * 50) for i in range(30)]])
    roll(plog, 1)
    clean(plog)
    write_segments(plog, [[], [], [(b"k1", b"w")]])
    roll(plog, 3)
    # The oldest dirty record is the first round's roll record, at NOW + 2h.
    assert plan_cleaning(plog, NOW + 12 * HOUR) is None
    plan = plan_cleaning(plog, NOW + 12 * HOUR + 1)
    assert plan is not None and plan.dirty_ratio < 0.1
    plog.close()


def test_logs_that_are_not_compacted_are_never_planned(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0", LogConfig(segment_ms=HOUR))
    write_segments(plog, [[(b"a", b"1")], [(b"a", b"2")]])
    roll(plog, 2)
    assert plan_cleaning(plog, NOW, force=True) is None
    plog.close()


def test_log_manager_lists_cleanable_logs_dirtiest_first(tmp_path: Path) -> None:
    manager = LogManager(tmp_path / "logs", COMPACT)
    dirty = manager.create("compacted", 0, now_ms=NOW)
    half = manager.create("compacted", 1, now_ms=NOW)
    plain = manager.create("plain", 0, LogConfig(segment_ms=HOUR), now_ms=NOW)
    for plog in (dirty, half, plain):
        write_segments(plog, [[(b"k%d" % i, b"v" * 50) for i in range(20)]])
        roll(plog, 1)
    clean(half)
    write_segments(half, [[], [], [(b"k%d" % i, b"w" * 50) for i in range(20)]])
    roll(half, 3)
    plans = manager.cleanable_logs(NOW)
    assert [p.log for p in plans] == [dirty, half]
    assert plans[0].dirty_ratio == 1.0 > plans[1].dirty_ratio >= 0.5
    for plan in plans:
        result = LogCleaner().clean(plan)
        assert result.commit()
    assert manager.cleanable_logs(NOW) == []
    manager.close()
    assert read_clean_offset(tmp_path / "logs" / "compacted-0") is not None
    write_clean_offset(tmp_path / "logs" / "plain-0", 0)  # harmless for delete topics
