"""Idempotent producers: duplicates, sequence gaps, fencing, rebuild after reopen."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.storage.log import SegmentLog

INT32_MAX = 2**31 - 1


def batch(seq: int, count: int = 2, *, pid: int = 1000, epoch: int = 0) -> bytes:
    return make_batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def error_of(plog: SegmentLog, payload: bytes) -> ErrorCode:
    end = plog.log_end_offset
    with pytest.raises(KafkaError) as exc:
        plog.append(payload, NOW)
    assert plog.log_end_offset == end  # nothing written
    return exc.value.error_code


@pytest.fixture
def plog(tmp_path: Path) -> SegmentLog:
    return SegmentLog.open(tmp_path / "t-0", LogConfig(segment_bytes=1500), NOW)


def test_retries_of_the_last_five_batches_are_duplicates(plog: SegmentLog) -> None:
    results = [plog.append(batch(seq), NOW) for seq in range(0, 14, 2)]
    end = plog.log_end_offset
    for seq, original in list(zip(range(0, 14, 2), results, strict=True))[-5:]:
        again = plog.append(batch(seq), NOW)
        assert again.duplicate
        assert (again.base_offset, again.last_offset) == (
            original.base_offset,
            original.last_offset,
        )
    assert plog.log_end_offset == end
    # Older than the cached five: no longer recognisable, so out of order.
    assert error_of(plog, batch(2)) == ErrorCode.out_of_order_sequence_number


def test_sequence_gaps_are_out_of_order(plog: SegmentLog) -> None:
    plog.append(batch(0), NOW)
    assert error_of(plog, batch(3)) == ErrorCode.out_of_order_sequence_number
    assert error_of(plog, batch(1)) == ErrorCode.out_of_order_sequence_number  # overlaps
    assert plog.append(batch(2), NOW).base_offset == 2


def test_sequences_wrap_at_int32_max(plog: SegmentLog) -> None:
    plog.append(batch(INT32_MAX - 1, 2), NOW)
    assert (
        error_of(plog, batch(INT32_MAX + 1 - 2**31 + 1)) == ErrorCode.out_of_order_sequence_number
    )
    assert plog.append(batch(0, 3), NOW).base_offset == 2
    assert plog.append(batch(3), NOW).base_offset == 5


def test_wrapping_batch_duplicate(plog: SegmentLog) -> None:
    first = plog.append(batch(INT32_MAX - 1, 4), NOW)  # sequences wrap inside the batch
    assert plog.append(batch(INT32_MAX - 1, 4), NOW).duplicate
    assert plog.append(batch(2), NOW).base_offset == first.last_offset + 1


def test_epochs(plog: SegmentLog) -> None:
    plog.append(batch(0, epoch=3), NOW)
    plog.append(batch(2, epoch=3), NOW)
    assert error_of(plog, batch(4, epoch=2)) == ErrorCode.invalid_producer_epoch
    # A new epoch starts at sequence 0.
    assert error_of(plog, batch(4, epoch=4)) == ErrorCode.out_of_order_sequence_number
    plog.append(batch(0, epoch=4), NOW)
    # Once bumped, the old epoch is fenced even for what was its next sequence.
    assert error_of(plog, batch(4, epoch=3)) == ErrorCode.invalid_producer_epoch
    # A duplicate must match the epoch too.
    assert not plog.append(batch(2, epoch=4), NOW).duplicate


def test_unknown_producer_may_start_anywhere(plog: SegmentLog) -> None:
    assert plog.append(batch(77, pid=5, epoch=9), NOW).base_offset == 0
    assert plog.append(batch(79, pid=5, epoch=9), NOW).base_offset == 2
    # Producers are independent, and non-idempotent batches are not checked.
    assert plog.append(batch(0, pid=6), NOW).base_offset == 4
    assert plog.append(make_batch(1), NOW).base_offset == 6


def test_several_batches_in_one_payload(plog: SegmentLog) -> None:
    r = plog.append(batch(0) + batch(2) + batch(0, pid=2), NOW)
    assert (r.base_offset, r.last_offset) == (0, 5)
    assert plog.append(batch(4), NOW).base_offset == 6
    assert error_of(plog, batch(6) + batch(9)) == ErrorCode.out_of_order_sequence_number
    assert plog.append(batch(6), NOW).base_offset == 8


@pytest.mark.parametrize("clean", [True, False])
def test_state_is_rebuilt_after_reopen(tmp_path: Path, clean: bool) -> None:
    config = LogConfig(segment_bytes=500)
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, config, NOW)
    results = {}
    for seq in range(0, 40, 2):
        results[seq] = plog.append(batch(seq, epoch=1), NOW)
    plog.append(batch(0, pid=2, epoch=5), NOW)
    assert len(plog.segments) > 3
    if clean:
        plog.close()
    else:
        # Crash: no close, and lose the snapshots the rolls wrote.
        for snapshot in d.glob("*.snapshot"):
            snapshot.unlink()
    plog = SegmentLog.open(d, config, NOW, recover=not clean)
    assert plog.append(batch(38, epoch=1), NOW).base_offset == results[38].base_offset
    assert plog.append(batch(36, epoch=1), NOW).duplicate
    assert error_of(plog, batch(42, epoch=1)) == ErrorCode.out_of_order_sequence_number
    assert error_of(plog, batch(2, pid=2, epoch=4)) == ErrorCode.invalid_producer_epoch
    assert plog.append(batch(40, epoch=1), NOW).base_offset == plog.log_end_offset - 2
    plog.close()


def test_truncation_rewinds_producer_state(plog: SegmentLog) -> None:
    plog.append(batch(0), NOW)
    plog.append(batch(2), NOW)
    plog.truncate_to(2)
    assert not plog.append(batch(2), NOW).duplicate
    assert plog.log_end_offset == 4


def test_expiration(plog: SegmentLog) -> None:
    plog.append(batch(0, pid=1), NOW)
    assert plog.producers.expire(NOW + 1000, 1000) == 0
    assert plog.producers.expire(NOW + 1001, 1000) == 1
    assert plog.append(batch(10, pid=1), NOW).base_offset == 2  # unknown again
