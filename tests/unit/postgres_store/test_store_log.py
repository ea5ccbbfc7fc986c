"""A partition led in cluster mode: offsets assigned in memory, only committed
batches visible, older ones read from the store."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.partitions.log import NotInMemory
from kgroups.postgres_store import store_log
from kgroups.postgres_store.store_log import StoreLog
from kgroups.records.batch import decode_records, encode_batch, iter_batches


def batch(*values: bytes) -> bytes:
    return encode_batch([(None, v, (), 1_000) for v in values])


def values(data: bytes) -> list[tuple[int, bytes | None]]:
    return [
        (r.offset, r.value)
        for pos, h in iter_batches(data)
        for r in decode_records(data[pos : pos + h.size])
    ]


def led(next_offset: int = 10) -> StoreLog:
    return StoreLog("t", 0, 3, 0, next_offset, LogConfig())


def test_offsets_follow_the_stores_log_end_and_the_commit_says_exactly_what_was_taken() -> None:
    slog = led(10)
    first = slog.append(batch(b"a", b"b"), 0)
    second = slog.append(batch(b"c"), 0)
    assert (first.base_offset, second.base_offset) == (10, 12)
    append = slog.take_pending()
    assert append is not None
    assert (append.expected_base, append.leader_epoch, len(append.batches)) == (10, 3, 2)
    assert slog.take_pending() is None  # nothing new since
    slog.append(batch(b"d"), 0)
    later = slog.take_pending()
    assert later is not None and later.expected_base == 13


def test_only_committed_batches_are_read() -> None:
    slog = led(10)
    slog.append(batch(b"a"), 0)
    assert slog.high_watermark == 10
    assert slog.read(10, 1 << 20) == b""  # appended, not yet in the store
    assert slog.take_pending() is not None
    slog.committed(10)
    assert slog.high_watermark == 11
    assert values(slog.read(10, 1 << 20)) == [(10, b"a")]


def test_offsets_before_the_memory_tail_are_read_from_the_store() -> None:
    slog = led(10)
    with pytest.raises(NotInMemory):
        slog.read(0, 1 << 20)
    with pytest.raises(KafkaError) as e:
        slog.read(11, 1 << 20)
    assert e.value.error_code == ErrorCode.offset_out_of_range


def test_the_memory_tail_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_log, "TAIL_BYTES", 200)
    slog = led(0)
    for i in range(10):
        slog.append(batch(bytes([i]) * 50), 0)
        slog.take_pending()
        slog.committed(i)
    with pytest.raises(NotInMemory):
        slog.read(0, 1 << 20)
    assert values(slog.read(9, 1 << 20)) == [(9, bytes([9]) * 50)]


def test_a_failed_log_takes_no_more_appends() -> None:
    slog = led(0)
    slog.append(batch(b"a"), 0)
    slog.fail(KafkaError(ErrorCode.not_leader_or_follower, "fenced"))
    assert slog.take_pending() is None
    with pytest.raises(KafkaError) as e:
        slog.append(batch(b"b"), 0)
    assert e.value.error_code == ErrorCode.not_leader_or_follower


def test_its_own_epoch_ends_at_what_the_store_committed() -> None:
    slog = led(10)
    assert slog.end_offset_for_epoch(3) == (3, 10)
    slog.append(batch(b"a", b"b"), 0)
    assert slog.end_offset_for_epoch(3) == (3, 10)  # not committed yet
    slog.take_pending()
    slog.committed(11)
    assert slog.end_offset_for_epoch(3) == (3, 12)
    assert slog.end_offset_for_epoch(4) == (-1, -1)
    assert slog.end_offset_for_epoch(-1) == (-1, -1)


def test_older_epochs_are_the_stores_unless_nothing_before_this_one_is_left() -> None:
    slog = led(10)
    with pytest.raises(NotInMemory):
        slog.end_offset_for_epoch(2)
    with pytest.raises(NotInMemory):
        slog.log_start_epoch()
    empty = StoreLog("t", 0, 3, 10, 10, LogConfig())
    assert empty.end_offset_for_epoch(2) == (2, 10)
    assert empty.end_offset_for_epoch(0) == (0, 10)
    assert empty.log_start_epoch() == 3
    slog.learnt_start_epoch(0, 1)
    assert slog.log_start_epoch() == 1
    slog.advance_log_start(4)
    with pytest.raises(NotInMemory):
        slog.log_start_epoch()  # what the store said was for another log start
    slog.advance_log_start(10)  # retention passed every older batch
    assert slog.end_offset_for_epoch(1) == (1, 10)
    assert slog.log_start_epoch() == 3
