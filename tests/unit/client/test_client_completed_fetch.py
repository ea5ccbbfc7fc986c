"""Turning fetched bytes into records from the consumer's position."""

from __future__ import annotations

import struct
from types import SimpleNamespace as NS

import pytest

from kgroups.client.completed_fetch import CompletedFetch
from kgroups.client.consumer_record import TopicPartition
from kgroups.errors import KafkaError
from kgroups.records.batch import encode_batch
from kgroups.records.compression import LZ4

TP = TopicPartition("t", 0)


def batch(base: int, count: int, **kwargs: object) -> bytes:
    records = [(None, f"v{base + i}".encode(), (), 1000 + i) for i in range(count)]
    return encode_batch(records, base_offset=base, **kwargs)  # type: ignore[arg-type]


def marker(offset: int, producer_id: int, abort: bool) -> bytes:
    key = struct.pack(">hh", 0, 0 if abort else 1)
    return encode_batch(
        [(key, b"", (), 0)],
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        is_control=True,
        is_transactional=True,
    )


def values(records: list[object]) -> list[bytes]:
    return [r.value for r in records]  # type: ignore[attr-defined]


def test_records_before_the_position_are_skipped() -> None:
    fetched = CompletedFetch(TP, batch(0, 5) + batch(5, 5), fetch_offset=3, epoch=1)
    records, position = fetched.take(3, 4)
    assert values(records) == [b"v3", b"v4", b"v5", b"v6"]
    assert position == 7
    records, position = fetched.take(position, 100)
    assert values(records) == [b"v7", b"v8", b"v9"]
    assert position == 10
    assert fetched.exhausted
    assert fetched.next_fetch_offset == 10


def test_a_truncated_last_batch_is_left_for_the_next_fetch() -> None:
    data = batch(0, 3) + batch(3, 3)[:-5]
    fetched = CompletedFetch(TP, data, fetch_offset=0, epoch=1)
    records, position = fetched.take(0, 100)
    assert len(records) == 3
    assert position == fetched.next_fetch_offset == 3


def test_compressed_batches_are_decoded() -> None:
    fetched = CompletedFetch(TP, batch(0, 50, compression=LZ4), fetch_offset=0, epoch=1)
    records, position = fetched.take(0, 100)
    assert values(records) == [f"v{i}".encode() for i in range(50)]
    assert records[0].timestamp == 1000  # type: ignore[attr-defined]
    assert records[0].topic_partition == TP  # type: ignore[attr-defined]
    assert position == 50


def test_control_batches_are_never_handed_out() -> None:
    data = batch(0, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    data += marker(2, 7, abort=False) + batch(3, 2)
    fetched = CompletedFetch(TP, data, fetch_offset=0, epoch=1)
    records, position = fetched.take(0, 100)
    assert values(records) == [b"v0", b"v1", b"v3", b"v4"]
    assert position == 5


def test_read_committed_skips_aborted_transactions() -> None:
    aborted = batch(0, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    committed = batch(3, 2, producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True)
    data = aborted + marker(2, 7, abort=True) + committed + marker(5, 8, abort=False)
    transactions = [NS(producer_id=7, first_offset=0)]
    fetched = CompletedFetch(
        TP, data, fetch_offset=0, epoch=1, aborted_transactions=transactions, read_committed=True
    )
    records, position = fetched.take(0, 100)
    assert values(records) == [b"v3", b"v4"]
    assert position == 6
    # read_uncommitted sees the aborted records too.
    fetched = CompletedFetch(TP, data, fetch_offset=0, epoch=1, aborted_transactions=transactions)
    assert values(fetched.take(0, 100)[0]) == [b"v0", b"v1", b"v3", b"v4"]


def test_a_corrupt_batch_is_reported() -> None:
    data = bytearray(batch(0, 3))
    data[-1] ^= 0xFF
    fetched = CompletedFetch(TP, bytes(data), fetch_offset=0, epoch=1)
    with pytest.raises(KafkaError, match="CRC"):
        fetched.take(0, 10)
