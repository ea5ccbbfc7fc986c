"""Swapping cleaned segments in: crash at every step, concurrent appends, aborts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from compaction_helpers import (
    COMPACT,
    HOUR,
    KeyValue,
    all_records,
    clean,
    key_values,
    open_compacted,
    roll,
    segment_files,
    write_segments,
)
from storage_helpers import NOW

from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.cleaner_checkpoint import read_clean_offset
from kgroups.storage.log import SegmentLog

SEGMENTS: list[list[KeyValue]] = [
    [(b"a", b"a1"), (b"b", b"b1")],  # 0-1
    [(b"a", b"a2"), (b"c", b"c1")],  # 2-3
    [(b"b", b"b2"), (None, b"x")],  # 4-5
]


class Crash(Exception):
    pass


def build(directory: Path) -> SegmentLog:
    plog = open_compacted(directory)
    write_segments(plog, SEGMENTS)
    roll(plog, len(SEGMENTS))
    return plog


def state(plog: SegmentLog) -> tuple[list[tuple[int, bytes | None, bytes | None]], list[int]]:
    return key_values(all_records(plog)), [s.base_offset for s in plog.segments]


def reference(tmp_path: Path) -> tuple[object, object, list[str]]:
    """The log's state before and after a clean, and the names of the swap's steps."""
    plog = build(tmp_path / "ref-0")
    before = state(plog)
    steps: list[str] = []
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    assert LogCleaner().clean(plan).commit(on_step=steps.append)
    after = state(plog)
    plog.close()
    return before, after, steps


def test_swap_steps(tmp_path: Path) -> None:
    before, after, steps = reference(tmp_path)
    assert steps == ["swap", "deleted 0", "deleted 2", "deleted 4", "live", "checkpoint"]
    assert before == (
        [
            (0, b"a", b"a1"),
            (1, b"b", b"b1"),
            (2, b"a", b"a2"),
            (3, b"c", b"c1"),
            (4, b"b", b"b2"),
            (5, None, b"x"),
            (6, b"roll", b"r"),
        ],
        [0, 2, 4, 6],
    )
    assert after == (
        [(2, b"a", b"a2"), (3, b"c", b"c1"), (4, b"b", b"b2"), (6, b"roll", b"r")],
        [0, 6],
    )


@pytest.mark.parametrize(
    "crash_after",
    ["cleaned", "swap", "deleted 0", "deleted 2", "deleted 4", "live", "checkpoint"],
)
def test_a_crash_at_any_step_leaves_the_old_or_the_new_segments(
    tmp_path: Path, crash_after: str
) -> None:
    before, after, _steps = reference(tmp_path)
    d = tmp_path / "t-0"
    plog = build(d)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    result = LogCleaner().clean(plan)
    if crash_after != "cleaned":  # else: killed before the swap began

        def step(name: str) -> None:
            if name == crash_after:
                raise Crash(name)

        with pytest.raises(Crash):
            result.commit(on_step=step)
    # The crashed log is abandoned as is, like a killed process; open recovers.
    reopened = open_compacted(d)
    assert state(reopened) == (before if crash_after == "cleaned" else after)
    assert not [n for n in segment_files(d) if n.count(".") > 1]  # no suffixed files left
    if crash_after != "checkpoint":
        assert read_clean_offset(d) is None
    # Cleaning again converges on the same log.
    clean(reopened)
    assert state(reopened) == after
    reopened.close()


def test_appends_go_on_while_a_worker_cleans(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, [[(b"k%d" % (i % 50), b"v%d" % i) for i in range(400)]] * 10)
    roll(plog, 10)
    plan = plan_cleaning(plog, NOW)
    assert plan is not None
    active_base = plog.segments[-1].base_offset

    async def clean_while_appending() -> list[int]:
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(None, LogCleaner().clean, plan)
        appended: list[int] = []
        while not job.done() or len(appended) < 300:
            # New records, some rolling new segments, while the worker reads.
            timestamp = NOW + (22 + len(appended) // 100 * 2) * HOUR
            r = plog.append_records([(b"new%d" % len(appended), b"n", (), timestamp)], NOW)
            appended.append(r.base_offset)
            if len(appended) % 10 == 0:
                await asyncio.sleep(0)
        result = await job
        assert result.commit()
        result.remove_replaced_files()
        return appended

    appended = asyncio.run(clean_while_appending())
    assert len(plog.segments) >= 5  # the cleaned one, the old active one, new rolls
    records = all_records(plog)
    closed = [r for r in records if r.offset < active_base]
    assert sorted(r.key for r in closed if r.key is not None) == sorted(
        b"k%d" % i for i in range(50)
    )
    assert [r.offset for r in records if r.key and r.key.startswith(b"new")] == appended
    assert plog.log_end_offset == appended[-1] + 1
    plog.close()
    reopened = open_compacted(tmp_path / "t-0")
    assert key_values(all_records(reopened)) == key_values(records)
    reopened.close()


def test_a_truncated_log_is_not_swapped(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = build(d)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    result = LogCleaner().clean(plan)
    plog.truncate_to(3)
    truncated = state(plog)
    assert not result.commit()
    assert state(plog) == truncated
    assert not [n for n in segment_files(d) if n.endswith(".cleaned")]
    assert read_clean_offset(d) is None
    with pytest.raises(RuntimeError):
        result.commit()
    plog.close()


def test_a_log_that_lost_segments_to_retention_is_not_swapped(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    config = COMPACT.with_overrides({"cleanup.policy": "compact,delete", "retention.ms": "1"})
    plog = open_compacted(d, config)
    write_segments(plog, SEGMENTS)
    roll(plog, len(SEGMENTS))
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    result = LogCleaner().clean(plan)
    assert plog.apply_retention(NOW + 3 * HOUR) == 2
    kept = state(plog)
    assert not result.commit()
    assert state(plog) == kept
    assert not [n for n in segment_files(d) if n.endswith(".cleaned")]
    plog.close()


def test_a_closed_log_is_not_swapped(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = build(d)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    result = LogCleaner().clean(plan)
    before = state(plog)
    plog.close()
    assert not result.commit()
    assert not [n for n in segment_files(d) if n.endswith(".cleaned")]
    reopened = open_compacted(d)
    assert state(reopened) == before
    reopened.close()


def test_segments_vanishing_under_the_worker_make_clean_fail_cleanly(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = build(d)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    plog.delete()  # the partition is deleted before the worker starts
    with pytest.raises(FileNotFoundError):
        LogCleaner().clean(plan)
