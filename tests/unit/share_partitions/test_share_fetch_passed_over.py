"""Which batches a share fetch passes over: transaction markers always, and
under read_committed the records of aborted transactions, as a
read_committed consumer drops them."""

from __future__ import annotations

from kgroups.handlers.share_reads import passed_over_batches
from kgroups.records.batch import BatchHeader, encode_batch, read_header

TS = 1_700_000_000_000


def header(
    base: int, count: int = 1, pid: int = -1, txn: bool = False, control: bool = False
) -> BatchHeader:
    records = [(None, b"v", (), TS)] * count
    raw = encode_batch(
        records,
        base_offset=base,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        is_transactional=txn,
        is_control=control,
    )
    return read_header(raw)


def test_markers_arepassed_over_batches() -> None:
    batches = [header(0, 3), header(3, pid=7, txn=True), header(4, pid=7, txn=True, control=True)]
    assert passed_over_batches(batches, []) == {4}


def test_an_aborted_transactions_records_are_passed_over_until_its_marker() -> None:
    batches = [
        header(0, 2, pid=7, txn=True),  # aborted
        header(2, 2, pid=8, txn=True),  # committed, interleaved
        header(4, 1, pid=7, txn=True, control=True),  # abort marker
        header(5, 1, pid=8, txn=True, control=True),  # commit marker
        header(6, 2, pid=7, txn=True),  # the producer's next transaction
    ]
    assert passed_over_batches(batches, [(7, 0)]) == {0, 4, 5}
