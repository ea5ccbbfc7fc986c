"""Transactions in a partition log: markers, the last stable offset, the aborted
transaction index, and their state across restarts and crashes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from storage_helpers import NOW

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.records.batch import (
    decode_records,
    encode_batch,
    iter_batches,
    read_header,
    records_section,
)
from kgroups.records.control import encode_marker, read_marker
from kgroups.storage.log import SegmentLog
from kgroups.storage.producer_snapshots import list_snapshots
from kgroups.storage.txn_index import txn_index_path

PID = 4000


def txn_batch(seq: int, count: int = 2, *, pid: int = PID, epoch: int = 0) -> bytes:
    records = [(b"k%d" % i, b"v%d" % (seq + i), [], NOW + i) for i in range(count)]
    return encode_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def plain(count: int = 1) -> bytes:
    return encode_batch([(b"k", b"plain", [], NOW)] * count)


@pytest.fixture
def plog(tmp_path: Path) -> SegmentLog:
    return SegmentLog.open(tmp_path / "t-0", LogConfig(segment_bytes=100_000), NOW)


def test_marker_is_a_control_batch_in_kafkas_layout() -> None:
    batch = encode_marker(PID, 3, coordinator_epoch=7, commit=True, timestamp=NOW)
    header = read_header(batch)
    assert header.attributes == 0x30  # control | transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PID, 3, -1)
    assert header.records_count == 1
    # One record: attributes 0, timestamp and offset deltas 0, key (version 0,
    # type 1 = commit), value (version 0, coordinator epoch 7), no headers.
    body = b"\x00\x00\x00" + b"\x08" + b"\x00\x00\x00\x01" + b"\x0c" + b"\x00\x00\x00\x00\x00\x07"
    assert records_section(batch, header) == bytes([len(body) + 1 << 1]) + body + b"\x00"
    abort = encode_marker(PID, 3, coordinator_epoch=7, commit=False, timestamp=NOW)
    assert decode_records(abort)[0].key == b"\x00\x00\x00\x00"
    assert read_marker(batch) == (True, 7)
    assert read_marker(abort) == (False, 7)


def test_last_stable_offset_stops_at_the_oldest_open_transaction(plog: SegmentLog) -> None:
    plog.append(plain(2), NOW)
    assert plog.last_stable_offset == 2
    plog.append(txn_batch(0), NOW)  # offsets 2-3
    plog.append(plain(), NOW)  # 4
    plog.append(txn_batch(0, pid=PID + 1), NOW)  # 5-6
    assert (plog.high_watermark, plog.last_stable_offset) == (7, 2)
    plog.append(txn_batch(2), NOW)  # 7-8: same transaction, LSO unmoved
    assert plog.last_stable_offset == 2
    assert plog.append_marker(PID, 0, 0, True, NOW) == 9
    assert plog.last_stable_offset == 5
    plog.append_marker(PID + 1, 0, 0, True, NOW)
    assert plog.last_stable_offset == plog.high_watermark == 11
    assert plog.aborted_transactions(0, 11) == []


def test_abort_is_indexed_in_kafkas_txnindex_format(plog: SegmentLog) -> None:
    plog.append(plain(), NOW)
    plog.append(txn_batch(0, 3), NOW)  # 1-3
    plog.append(txn_batch(0, pid=PID + 1), NOW)  # 4-5
    marker = plog.append_marker(PID, 0, 5, False, NOW)  # 6
    assert plog.aborted_transactions(0, 10) == [(PID, 1)]
    assert plog.aborted_transactions(4, 10) == [(PID, 1)]  # overlaps [4, 10)
    assert plog.aborted_transactions(7, 10) == []  # ends before 7
    assert plog.aborted_transactions(0, 1) == []  # starts at 1
    data = txn_index_path(plog.directory, 0).read_bytes()
    # version, producer id, first offset, last offset, LSO (the other open one, at 4)
    assert data == struct.pack(">hqqqq", 0, PID, 1, marker, 4)


def test_stale_markers_are_fenced(plog: SegmentLog) -> None:
    plog.append(txn_batch(0, epoch=2), NOW)
    plog.append_marker(PID, 2, 4, True, NOW)
    end = plog.log_end_offset
    with pytest.raises(KafkaError) as exc:
        plog.append_marker(PID, 1, 4, True, NOW)
    assert exc.value.error_code == ErrorCode.invalid_producer_epoch
    with pytest.raises(KafkaError) as exc:
        plog.append_marker(PID, 2, 3, False, NOW)
    assert exc.value.error_code == ErrorCode.transaction_coordinator_fenced
    assert plog.log_end_offset == end  # nothing written


def test_open_transaction_survives_a_clean_restart(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    plog = SegmentLog.open(directory, LogConfig(), NOW)
    plog.append(plain(), NOW)
    plog.append(txn_batch(0), NOW)
    plog.close()
    plog = SegmentLog.open(directory, LogConfig(), NOW, recover=False)
    assert (plog.last_stable_offset, plog.high_watermark) == (1, 3)
    plog.append_marker(PID, 0, 0, False, NOW)
    assert plog.last_stable_offset == 4
    assert plog.aborted_transactions(0, 4) == [(PID, 1)]
    plog.close()


def test_version_1_snapshots_are_still_read() -> None:
    body = struct.pack(">qhb", PID, 3, 1) + struct.pack(">iiqqq", 0, 4, 10, 14, NOW)
    from crc32c import crc32c

    data = struct.pack(">4shIi", b"KGPS", 1, crc32c(body), 1) + body
    state = ProducerStateManager.from_snapshot(data)
    entry = state.get(PID)
    assert entry is not None and (entry.epoch, entry.last_seq, entry.last_offset) == (3, 4, 14)
    assert state.first_unstable_offset() is None
    again = ProducerStateManager.from_snapshot(state.to_snapshot())
    assert again.get(PID) is not None


def _crash(plog: SegmentLog) -> None:
    """kill -9: nothing flushed, snapshotted or closed."""
    plog.abandon()


def test_open_transactions_and_aborts_are_rebuilt_after_a_crash(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=400)
    plog = SegmentLog.open(directory, config, NOW)
    for seq in range(0, 8, 2):
        plog.append(txn_batch(seq, pid=PID + 1), NOW)  # rolls: snapshots before the marker
    plog.append(txn_batch(0), NOW)
    plog.append_marker(PID + 1, 0, 1, False, NOW)
    first = plog.log_end_offset
    plog.append(txn_batch(0, pid=PID + 2), NOW)
    assert len(plog.segments) > 1 and list_snapshots(directory)
    lso, aborted = plog.last_stable_offset, plog.aborted_transactions(0, first)
    assert aborted == [(PID + 1, 0)]
    _crash(plog)
    for path in directory.glob("*.txnindex"):
        path.write_bytes(path.read_bytes()[:-5])  # the index write was cut short
    plog = SegmentLog.open(directory, config, NOW, recovery_point=0)
    assert plog.last_stable_offset == lso
    assert plog.aborted_transactions(0, first) == aborted
    # The rebuilt state fences and completes as before.
    with pytest.raises(KafkaError) as exc:
        plog.append_marker(PID + 1, 0, 0, True, NOW)
    assert exc.value.error_code == ErrorCode.transaction_coordinator_fenced
    plog.append_marker(PID, 0, 1, True, NOW)
    assert plog.last_stable_offset == first
    plog.close()


def test_expiry_keeps_producers_with_an_open_transaction(plog: SegmentLog) -> None:
    plog.append(txn_batch(0), NOW)
    plog.append(txn_batch(0, pid=PID + 1), NOW)
    plog.append_marker(PID + 1, 0, 0, True, NOW)
    day = 86_400_000
    assert plog.producers.expire(NOW + 2 * day, day) == 1
    assert plog.producers.get(PID) is not None
    assert plog.last_stable_offset == 0


def test_txnindex_goes_with_its_segment(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=300, retention_ms=1000)
    plog = SegmentLog.open(directory, config, NOW)
    plog.append(txn_batch(0), NOW)
    plog.append_marker(PID, 0, 0, False, NOW)
    while len(plog.segments) < 3:
        plog.append(plain(3), NOW + 10_000)
    assert txn_index_path(directory, 0).exists()
    assert plog.apply_retention(NOW + 5000) >= 1
    for path in plog.take_retired_files():
        path.unlink()
    assert not txn_index_path(directory, 0).exists()
    assert plog.aborted_transactions(0, plog.log_end_offset) == []
    plog.close()


def test_truncation_drops_aborts_it_cuts_off(plog: SegmentLog) -> None:
    plog.append(plain(), NOW)
    plog.append(txn_batch(0), NOW)
    plog.append_marker(PID, 0, 0, False, NOW)  # 3
    plog.truncate_to(3)
    assert plog.aborted_transactions(0, 10) == []
    assert plog.last_stable_offset == 1  # the transaction is open again
    assert not txn_index_path(plog.directory, 0).exists()
    assert [h.base_offset for _p, h in iter_batches(plog.read(0, 10_000))] == [0, 1]


def test_last_stable_offset_is_never_below_the_log_start(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300, retention_ms=1000)
    plog = SegmentLog.open(tmp_path / "t-0", config, NOW)
    plog.append(txn_batch(0), NOW)  # open, in the first segment
    while len(plog.segments) < 3:
        plog.append(plain(3), NOW + 10_000)
    assert plog.apply_retention(NOW + 5000) >= 1
    assert plog.last_stable_offset == plog.log_start_offset > 0
    plog.close()


def test_a_torn_txnindex_entry_is_cut_before_the_next_one(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    plog = SegmentLog.open(directory, LogConfig(), NOW)
    plog.append(txn_batch(0), NOW)
    plog.append_marker(PID, 0, 0, False, NOW)
    plog.close()
    path = txn_index_path(directory, 0)
    path.write_bytes(path.read_bytes() + b"\x00\x00\x00")  # a torn write after it
    plog = SegmentLog.open(directory, LogConfig(), NOW, recover=False)
    plog.append(txn_batch(0, pid=PID + 1), NOW)
    plog.append_marker(PID + 1, 0, 0, False, NOW)
    plog.close()
    plog = SegmentLog.open(directory, LogConfig(), NOW, recover=False)
    assert plog.aborted_transactions(0, 10) == [(PID, 0), (PID + 1, 3)]
    assert len(path.read_bytes()) == 2 * 34
    plog.close()


def test_a_snapshot_that_predates_the_ending_of_a_transaction_is_outgrown_by_removing_it(
    tmp_path: Path,
) -> None:
    """A marker appended as a plain batch (how offsets partitions' markers were
    written before) leaves the transaction open in the producers' state, and a
    snapshot keeps it open across restarts; without snapshots, opening rebuilds
    the state from the batches and the marker ends it (docs/offsets.md)."""
    directory = tmp_path / "__consumer_offsets-0"
    plog = SegmentLog.open(directory, LogConfig(segment_bytes=100_000), NOW)
    plog.append(txn_batch(0), NOW)
    plog.append_batch(encode_marker(PID, 0, coordinator_epoch=0, commit=True, timestamp=NOW), NOW)
    plog.append(plain(), NOW)
    assert plog.last_stable_offset == 0  # the old path did not end the transaction
    plog.close()  # writes a snapshot at the log end

    reopened = SegmentLog.open(directory, LogConfig(segment_bytes=100_000), NOW, recover=False)
    assert reopened.last_stable_offset == 0
    reopened.close()

    for _offset, path in list_snapshots(directory):
        path.unlink()
    rebuilt = SegmentLog.open(directory, LogConfig(segment_bytes=100_000), NOW, recover=False)
    assert rebuilt.last_stable_offset == rebuilt.high_watermark == 4
    rebuilt.close()
