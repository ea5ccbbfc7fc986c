"""Records of a ShareFetch answer: only the acquired ones, with their delivery
counts; an acquired offset without a record is a gap to acknowledge."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.share_completed_fetch import acquired_records
from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import encode_batch, read_header, records_section
from kgroups.records.filter import filtered_batch
from kgroups.records.scan import scan_records

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


def test_a_few_records_from_the_middle_of_a_large_compressed_batch() -> None:
    # Members sharing a partition each get a slice of the same stored batch.
    data = encode_batch(
        [(None, f"v{i}".encode(), (), 0) for i in range(5000)], base_offset=0, compression=1
    )
    records, gaps = acquired_records(
        TP, data, [_acquired(2000, 2019, 1), _acquired(2025, 2025, 2)], check_crcs=True
    )
    assert [(r.offset, r.value, r.delivery_count) for r in records] == [
        *((o, f"v{o}".encode(), 1) for o in range(2000, 2020)),
        (2025, b"v2025", 2),
    ]
    assert gaps == []


def test_a_compacted_batch_yields_its_acquired_records_and_gaps() -> None:
    # One stored batch of offsets 0..5 from which compaction removed 2 and 3.
    whole = encode_batch([(None, f"v{i}".encode(), (), 0) for i in range(6)])
    header = read_header(whole)
    section = records_section(whole, header)
    spans = scan_records(section, header.records_count)
    data = filtered_batch(header, section, [s for s in spans if s[2] not in (2, 3)])
    records, gaps = acquired_records(TP, data, [_acquired(1, 4, 1)], check_crcs=True)
    assert [(r.offset, r.value) for r in records] == [(1, b"v1"), (4, b"v4")]
    assert gaps == [2, 3]


def test_transaction_markers_are_never_records() -> None:
    data = encode_batch([(None, b"a", (), 0)], base_offset=0, is_transactional=True, producer_id=7)
    marker = encode_batch(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", (), 0)],
        base_offset=1,
        is_transactional=True,
        is_control=True,
        producer_id=7,
    )
    records, gaps = acquired_records(TP, data + marker, [_acquired(0, 0, 1)], check_crcs=True)
    assert [r.value for r in records] == [b"a"]
    assert gaps == []


def test_a_batch_failing_its_crc_is_refused() -> None:
    data = bytearray(encode_batch([(None, b"v%d" % i, (), 0) for i in range(10)]))
    data[-1] ^= 0xFF
    with pytest.raises(KafkaError) as refused:
        acquired_records(TP, bytes(data), [_acquired(3, 4, 1)], check_crcs=True)
    assert refused.value.error_code == ErrorCode.corrupt_message


def test_keys_headers_and_timestamps_come_out_as_a_plain_fetch_decodes_them() -> None:
    from kgroups.records.batch import decode_records

    data = encode_batch(
        [(b"k0", b"v0", (("h", b"x"),), 1000), (None, None, (), 1005), (b"k2", b"", (), 1010)],
        base_offset=7,
    )
    records, gaps = acquired_records(TP, data, [_acquired(7, 9, 1)], check_crcs=True)
    assert gaps == []
    assert [r[2:8] for r in records] == [
        (o, t, 0, k, v, h) for o, t, k, v, h in decode_records(data)
    ]
    assert records[0].headers == (("h", b"x"),) and records[1].value is None
