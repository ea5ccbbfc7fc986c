"""Compaction of a log holding transactions: aborted records go, markers stay,
and nothing from an open transaction's segment on is cleaned."""

from __future__ import annotations

from pathlib import Path

import pytest
from compaction_helpers import HOUR, all_records, clean, open_compacted
from storage_helpers import NOW

from kgroups.records.batch import encode_batch, iter_batches
from kgroups.storage.cleanable import plan_cleaning
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.log import SegmentLog

P, Q = 9000, 9001


def txn(plog: SegmentLog, pid: int, seq: int, key: bytes, value: bytes, ts: int) -> None:
    batch = encode_batch(
        [(key, value, (), ts)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )
    plog.append(batch, NOW)


def data(plog: SegmentLog) -> list[tuple[bytes | None, bytes | None]]:
    """Data records (markers' keys start with their version, 0)."""
    return [(r.key, r.value) for r in all_records(plog) if r.key and r.key[0]]


def control_count(plog: SegmentLog) -> int:
    count, offset = 0, plog.log_start_offset
    while offset < plog.log_end_offset:
        chunk = plog.read(offset, 1 << 20)
        for _pos, header in iter_batches(chunk):
            count += header.is_control
            offset = header.last_offset + 1
    return count


def test_aborted_records_go_and_markers_stay(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "c-0")
    plog.append_records([(b"key-a", b"first", (), NOW)], NOW)  # 0
    txn(plog, P, 0, b"key-a", b"aborted", NOW + 1)  # 1
    txn(plog, Q, 0, b"key-b", b"committed", NOW + 2)  # 2
    plog.append_marker(P, 0, 0, False, NOW + 3)  # 3
    plog.append_marker(Q, 0, 0, True, NOW + 4)  # 4
    plog.append_records([(b"roll", b"r", (), NOW + 2 * HOUR)], NOW)  # new segment
    assert len(plog.segments) == 2
    clean(plog)
    assert data(plog) == [(b"key-a", b"first"), (b"key-b", b"committed"), (b"roll", b"r")]
    assert control_count(plog) == 2
    assert plog.aborted_transactions(0, plog.log_end_offset) == [(P, 1)]
    plog.close()


def test_an_open_transaction_stops_cleaning_at_its_segment(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "c-0")
    plog.append_records([(b"key-a", b"old", (), NOW)], NOW)
    plog.append_records([(b"key-a", b"new", (), NOW + 1)], NOW)
    txn(plog, P, 0, b"key-b", b"open", NOW + 2)
    plog.append_records([(b"roll", b"r", (), NOW + 2 * HOUR)], NOW)
    assert len(plog.segments) == 2
    assert plan_cleaning(plog, NOW, force=True) is None
    plog.append_marker(P, 0, 0, True, NOW + 2 * HOUR)
    clean(plog)
    assert data(plog) == [(b"key-a", b"new"), (b"key-b", b"open"), (b"roll", b"r")]
    plog.close()


def _two_aborted_segments(directory: Path) -> SegmentLog:
    plog = open_compacted(directory)
    for i, pid in enumerate((P, Q)):
        ts = NOW + 2 * i * HOUR
        plog.append_records([(b"key-%d" % i, b"kept", (), ts)], NOW)
        txn(plog, pid, 0, b"key-%d" % i, b"aborted", ts + 1)
        plog.append_marker(pid, 0, 0, False, ts + 2)
    plog.append_records([(b"roll", b"r", (), NOW + 4 * HOUR)], NOW)
    assert [s.base_offset for s in plog.segments] == [0, 3, 6]
    return plog


@pytest.mark.parametrize("crash_after", ["swap", "deleted 0", "deleted 3", "live"])
def test_a_crash_during_the_swap_keeps_every_aborted_transaction(
    tmp_path: Path, crash_after: str
) -> None:
    directory = tmp_path / "c-0"
    plog = _two_aborted_segments(directory)
    plan = plan_cleaning(plog, NOW, force=True)
    assert plan is not None
    result = LogCleaner().clean(plan)

    def step(name: str) -> None:
        if name == crash_after:
            raise RuntimeError(name)

    with pytest.raises(RuntimeError):
        result.commit(on_step=step)
    reopened = open_compacted(directory)  # the crashed log is abandoned as is
    assert [s.base_offset for s in reopened.segments] == [0, 6]
    assert reopened.aborted_transactions(0, 7) == [(P, 1), (Q, 4)]
    assert data(reopened) == [(b"key-0", b"kept"), (b"key-1", b"kept"), (b"roll", b"r")]
    reopened.close()
