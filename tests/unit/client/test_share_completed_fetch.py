"""Records of a ShareFetch answer: only the acquired ones, with their delivery
counts; an acquired offset without a record is a gap to acknowledge."""

from __future__ import annotations

from types import SimpleNamespace

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.share_completed_fetch import acquired_records
from kgroups.records.batch import encode_batch

TP = TopicPartition("t", 0)


def _acquired(first: int, last: int, count: int) -> SimpleNamespace:
    return SimpleNamespace(first_offset=first, last_offset=last, delivery_count=count)


def test_only_acquired_records_come_out_with_their_delivery_counts() -> None:
    # One stored batch of offsets 10..14; the member acquired 11..12 and 14.
    data = encode_batch([(None, f"v{i}".encode(), (), 0) for i in range(5)], base_offset=10)
    records, gaps = acquired_records(
        TP, data, [_acquired(14, 14, 3), _acquired(11, 12, 1)], check_crcs=True
    )
    assert [(r.offset, r.value, r.delivery_count) for r in records] == [
        (11, b"v1", 1),
        (12, b"v2", 1),
        (14, b"v4", 3),
    ]
    assert gaps == []


def test_acquired_offsets_without_a_record_are_gaps() -> None:
    # Offsets 1 and 2 were compacted away: the stored batch holds 0 and 3 only.
    data = encode_batch([(None, b"a", (), 0)], base_offset=0) + encode_batch(
        [(None, b"d", (), 0)], base_offset=3
    )
    records, gaps = acquired_records(TP, data, [_acquired(0, 3, 2)], check_crcs=True)
    assert [(r.offset, r.delivery_count) for r in records] == [(0, 2), (3, 2)]
    assert gaps == [1, 2]


def test_nothing_acquired_is_nothing() -> None:
    assert acquired_records(TP, None, [], check_crcs=True) == ([], [])
