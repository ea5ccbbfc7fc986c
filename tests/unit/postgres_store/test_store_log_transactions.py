"""Transactions in a partition led in cluster mode: the last stable offset and
the aborted transactions follow what the store committed, never what is only
appended in memory."""

from __future__ import annotations

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.partitions.log import NotInMemory
from kgroups.postgres_store import store_log
from kgroups.postgres_store.aborted_txns import AbortedTxn
from kgroups.postgres_store.store_log import StoreLog
from kgroups.records.batch import encode_batch, read_header

PID = 42


def txn_batch(seq: int, *values: bytes, pid: int = PID, epoch: int = 0) -> bytes:
    return encode_batch(
        [(b"k", v, (), 1_000) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def plain(*values: bytes) -> bytes:
    return encode_batch([(None, v, (), 1_000) for v in values])


def commit_all(slog: StoreLog) -> None:
    """What the store writer does once the store committed the pending batches."""
    append = slog.take_pending()
    assert append is not None
    slog.committed(read_header(append.batches[-1]).last_offset)


def led(next_offset: int = 10) -> StoreLog:
    return StoreLog("t", 0, 3, 0, next_offset, LogConfig())


def test_an_open_transaction_holds_the_last_stable_offset_once_committed() -> None:
    slog = led(10)
    slog.append(plain(b"a"), 0)
    slog.append(txn_batch(0, b"t1", b"t2"), 0)
    # Not in the store yet: the high watermark bounds everything.
    assert slog.last_stable_offset == slog.high_watermark == 10
    commit_all(slog)
    assert slog.high_watermark == 13
    assert slog.last_stable_offset == 11
    slog.append(plain(b"b"), 0)
    commit_all(slog)
    assert (slog.high_watermark, slog.last_stable_offset) == (14, 11)


def test_the_lso_passes_a_marker_only_once_the_store_holds_it() -> None:
    slog = led(0)
    slog.append(txn_batch(0, b"t"), 0)
    commit_all(slog)
    offset = slog.append_marker(PID, 0, 5, True, 2_000)
    assert offset == 1
    # Ended in the producers' state, but the marker may still be lost.
    assert not slog.producers.in_transaction(PID)
    assert slog.last_stable_offset == 0
    append = slog.take_pending()
    assert append is not None and append.aborted == []
    (row,) = append.producers
    assert (row[4], row[5]) == (5, -1)  # coordinator epoch, no transaction open
    assert slog.last_stable_offset == 0  # in flight
    slog.committed(offset)
    assert slog.last_stable_offset == slog.high_watermark == 2


def test_an_abort_is_told_to_fetches_once_committed_and_its_entry_rides_with_the_marker() -> None:
    slog = led(0)
    slog.append(plain(b"before"), 0)
    slog.append(txn_batch(0, b"x", b"y"), 0)
    commit_all(slog)
    marker = slog.append_marker(PID, 0, 1, False, 2_000)
    assert marker == 3
    assert slog.aborted_transactions(0, 10) == []
    append = slog.take_pending()
    assert append is not None
    assert append.aborted == [AbortedTxn(PID, 1, 3, 4)]
    assert read_header(append.batches[0]).is_control
    slog.committed(marker)
    # Kafka's rule: marker at or after the fetch offset, first offset below its end.
    assert slog.aborted_transactions(0, 4) == [(PID, 1)]
    assert slog.aborted_transactions(3, 4) == [(PID, 1)]
    assert slog.aborted_transactions(0, 1) == []
    assert slog.aborted_transactions(4, 10) == []
    assert slog.last_stable_offset == 4


def test_aborts_before_what_this_leader_holds_are_the_stores() -> None:
    slog = led(10)
    with pytest.raises(NotInMemory):
        slog.aborted_transactions(5, 20)
    assert slog.aborted_transactions(10, 20) == []


def test_aborts_are_forgotten_with_the_memory_tail_and_the_log_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_log, "TAIL_BYTES", 400)
    slog = led(0)
    slog.append(txn_batch(0, b"x"), 0)
    commit_all(slog)
    slog.append_marker(PID, 0, 1, False, 2_000)
    commit_all(slog)
    assert slog.aborted_transactions(0, 2) == [(PID, 0)]
    slog.advance_log_start(2)  # wholly before the new start: gone, as in Kafka
    with pytest.raises(NotInMemory):
        slog.aborted_transactions(0, 2)
    assert slog.aborted_transactions(2, 3) == []
    for i in range(10):
        slog.append(plain(bytes([i]) * 100), 0)
        commit_all(slog)
    with pytest.raises(NotInMemory):
        slog.aborted_transactions(2, 20)  # those batches are only in the store now


def test_a_stale_marker_is_refused_with_kafkas_errors() -> None:
    slog = led(0)
    slog.append(txn_batch(0, b"x", epoch=2), 0)
    slog.append_marker(PID, 2, 7, True, 2_000)
    with pytest.raises(KafkaError) as fenced:
        slog.append_marker(PID, 2, 6, False, 2_000)
    assert fenced.value.error_code == ErrorCode.transaction_coordinator_fenced
    with pytest.raises(KafkaError) as old:
        slog.append_marker(PID, 1, 7, False, 2_000)
    assert old.value.error_code == ErrorCode.invalid_producer_epoch
    append = slog.take_pending()
    assert append is not None and len(append.batches) == 2  # nothing appended for them


def test_a_failed_commit_forgets_the_markers_not_committed() -> None:
    slog = led(0)
    slog.append(txn_batch(0, b"x"), 0)
    commit_all(slog)
    slog.append_marker(PID, 0, 1, False, 2_000)
    slog.fail(KafkaError(ErrorCode.not_leader_or_follower, "fenced"))
    assert slog.txns.first_unsettled() is None
    with pytest.raises(KafkaError):
        slog.append_marker(PID, 0, 1, False, 2_000)


def test_the_producer_row_carries_the_open_transaction() -> None:
    slog = led(0)
    slog.append(plain(b"a"), 0)
    slog.append(txn_batch(0, b"x"), 0)
    append = slog.take_pending()
    assert append is not None
    (row,) = append.producers
    assert (row[0], row[4], row[5]) == (PID, -1, 1)
