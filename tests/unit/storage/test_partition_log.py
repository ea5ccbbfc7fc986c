"""Appending to and reading from a partition log across segments."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch, open_log

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import decode_records, encode_batch, iter_batches, read_header
from kgroups.storage.log import SegmentLog

SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=200)


def fill(plog: SegmentLog, batches: int, seed: int = 1) -> list[tuple[int, int, bytes]]:
    """Append random batches; returns (base offset, last offset, stored bytes) of each."""
    rng = random.Random(seed)
    written = []
    for i in range(batches):
        count = rng.randint(1, 6)
        batch = make_batch(
            count, value_size=rng.randint(0, 120), timestamp=NOW + i * 10, compression=i % 5
        )
        result = plog.append(batch, NOW + i)
        assert result.last_offset - result.base_offset == count - 1
        written.append((result.base_offset, result.last_offset, batch))
    return written


def bases(data: bytes) -> list[int]:
    return [h.base_offset for _, h in iter_batches(data)]


def test_offsets_are_contiguous_and_segments_roll(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    written = fill(plog, 200)
    assert written[0][0] == 0
    for (_, last, _), (base, _, _) in itertools.pairwise(written):
        assert base == last + 1
    assert plog.log_end_offset == plog.high_watermark == written[-1][1] + 1
    assert len(plog.segments) > 5
    for segment in plog.segments[:-1]:
        assert segment.size <= SMALL.segment_bytes
    for a, b in zip(plog.segments, plog.segments[1:], strict=False):
        assert a.next_offset == b.base_offset
        assert (tmp_path / "t-0" / f"{b.base_offset:020d}.log").exists()
        assert (tmp_path / "t-0" / f"{b.base_offset:020d}.index").exists()
    plog.close()


def test_read_at_every_offset_returns_the_batch_holding_it(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    written = fill(plog, 150)
    for base, last, _ in written:
        for offset in range(base, last + 1):
            data = plog.read(offset, 1)  # smaller than any batch: exactly one (KIP-74)
            ((pos, header),) = iter_batches(data)
            assert pos == 0 and header.base_offset == base and len(data) == header.size
    plog.close()


def test_read_returns_whole_batches_up_to_max_bytes(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    written = fill(plog, 150)
    by_base = {base: (last, batch) for base, last, batch in written}
    for max_bytes in (100, 500, 1000, 3000, 10_000):
        offset = 0
        while offset < plog.log_end_offset:
            data = plog.read(offset, max_bytes)
            found = list(iter_batches(data))
            assert found, offset
            assert sum(h.size for _, h in found) == len(data)  # no partial batch
            assert len(data) <= max_bytes or len(found) == 1
            for _pos, header in found:
                last, batch = by_base[header.base_offset]
                assert header.last_offset == last
                assert decode_records(data[_pos : _pos + header.size]) == [
                    r._replace(offset=r.offset + header.base_offset) for r in decode_records(batch)
                ]
            offset = found[-1][1].last_offset + 1
    plog.close()


def test_read_stored_bytes_are_the_clients_apart_from_offsets(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    batch = make_batch(5, compression=2)
    plog.append(make_batch(3), NOW)
    plog.append(batch, NOW)
    stored = plog.read(3, 1 << 20)
    assert stored[:8] == (3).to_bytes(8, "big")
    assert stored[16:] == batch[16:]  # partition leader epoch aside, byte for byte
    plog.close()


def test_read_limits(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    fill(plog, 50)
    end = plog.log_end_offset
    assert plog.read(end, 1000) == b""
    for bad in (-1, end + 1):
        with pytest.raises(KafkaError) as exc:
            plog.read(bad, 1000)
        assert exc.value.error_code == ErrorCode.offset_out_of_range
    # max_offset leaves out batches reaching it.
    data = plog.read(0, 1 << 20, max_offset=20)
    assert data and all(h.last_offset < 20 for _, h in iter_batches(data))
    assert plog.read(5, 1 << 20, max_offset=5) == b""
    # Without min_one a first batch larger than max_bytes is not returned.
    assert plog.read(0, 10, min_one=False) == b""
    assert plog.read(0, 10) != b""
    plog.close()


def test_append_result_and_leader_epoch(tmp_path: Path) -> None:
    plog = SegmentLog.open(tmp_path / "t-0", LogConfig(), NOW, leader_epoch=4)
    r = plog.append(make_batch(3), NOW)
    assert (r.base_offset, r.last_offset, r.log_append_time, r.log_start_offset) == (0, 2, -1, 0)
    assert not r.duplicate
    assert read_header(plog.read(0, 100)).partition_leader_epoch == 4
    plog.close()


def test_log_append_time(tmp_path: Path) -> None:
    config = LogConfig(message_timestamp_type="LogAppendTime")
    plog = open_log(tmp_path / "t-0", config)
    r = plog.append(make_batch(2, timestamp=5), NOW + 77)
    assert r.log_append_time == NOW + 77
    records = decode_records(plog.read(0, 1000))
    assert [rec.timestamp for rec in records] == [NOW + 77] * 2
    plog.close()


def test_many_segments_index_lookups_after_reopen(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=20_000, index_interval_bytes=64)
    plog = open_log(tmp_path / "t-0", config)
    written = fill(plog, 600, seed=3)
    plog.close()
    plog = open_log(tmp_path / "t-0", config)
    assert plog.log_end_offset == written[-1][1] + 1
    assert len(plog.segments[0].index) > 10
    for base, last, _ in written[::7]:
        assert bases(plog.read(last, 1)) == [base]
    plog.close()


def test_offset_for_timestamp(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    # Batch i holds records with timestamps NOW + i*10 + j; all at leader epoch 0.
    written = fill(plog, 120)
    for i in (0, 1, 37, 119):
        base = written[i][0]
        assert plog.offset_for_timestamp(NOW + i * 10) == (base, NOW + i * 10, 0)
    # Between batches: the first record at or after the timestamp.
    i = 50
    count = written[i][1] - written[i][0] + 1
    hit = plog.offset_for_timestamp(NOW + i * 10 + count)
    assert hit is not None and hit.offset == written[i + 1][0]
    assert plog.offset_for_timestamp(NOW + 10_000) is None
    assert plog.offset_for_timestamp(0) == (0, NOW, 0)
    plog.close()


def test_offset_for_timestamp_with_unordered_timestamps(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    for ts in (500, 100, 900, 300, 950):
        plog.append(encode_batch([(b"k", b"v", [], ts)]), NOW)
    assert plog.offset_for_timestamp(200) == (0, 500, 0)
    assert plog.offset_for_timestamp(600) == (2, 900, 0)
    assert plog.offset_for_timestamp(901) == (4, 950, 0)
    assert plog.max_timestamp_offset() == (4, 950, 0)
    plog.close()


def test_max_timestamp_offset(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    assert plog.max_timestamp_offset() is None
    plog.append(encode_batch([(b"a", b"", [], 10), (b"b", b"", [], 99), (b"c", b"", [], 20)]), NOW)
    fill(plog, 60)
    plog.append(encode_batch([(b"a", b"", [], 10**15), (b"b", b"", [], 5)]), NOW)
    fill(plog, 60, seed=9)
    end = plog.log_end_offset
    hit = plog.max_timestamp_offset()
    assert hit is not None and hit.timestamp == 10**15
    assert decode_records(plog.read(hit.offset, 1))[0].timestamp == 10**15
    plog.close()
    plog = open_log(tmp_path / "t-0", SMALL)
    assert plog.max_timestamp_offset() == hit
    assert plog.log_end_offset == end
    plog.close()


def test_append_records_for_internal_writes(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    r = plog.append_records([(b"k", b"v", [("h", None)], 123)], NOW, compression=4)
    assert (r.base_offset, r.last_offset) == (0, 0)
    control = encode_batch([(b"\x00\x00\x00\x00", b"", [], 1)], is_control=True)
    assert plog.append_batch(control, NOW).base_offset == 1
    with pytest.raises(KafkaError):
        plog.append(control, NOW)
    assert [r.key for r in decode_records(plog.read(0, 100))] == [b"k"]
    plog.close()


def test_truncate_to(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    written = fill(plog, 100)
    middle = written[60]
    plog.truncate_to(middle[0] + 1)  # inside a batch: the whole batch goes
    assert plog.log_end_offset == middle[0]
    assert bases(plog.read(written[59][0], 1 << 20))[-1] == written[59][0]
    r = plog.append(make_batch(2), NOW)
    assert r.base_offset == middle[0]
    plog.close()
    plog = open_log(tmp_path / "t-0", SMALL)
    assert plog.log_end_offset == middle[0] + 2
    plog.truncate_to(0)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0)
    assert plog.append(make_batch(1), NOW).base_offset == 0
    assert len(plog.segments) == 1
    plog.close()


def test_closed_log_refuses_work(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    plog.append(make_batch(1), NOW)
    plog.close()
    plog.close()
    with pytest.raises(KafkaError) as exc:
        plog.append(make_batch(1), NOW)
    assert exc.value.error_code == ErrorCode.kafka_storage_error


def test_segment_ms_rolls_by_record_time(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", LogConfig(segment_ms=1000))
    plog.append(make_batch(1, timestamp=NOW), NOW)
    plog.append(make_batch(1, timestamp=NOW + 1000), NOW)
    assert len(plog.segments) == 1
    plog.append(make_batch(1, timestamp=NOW + 1001), NOW)
    assert [s.base_offset for s in plog.segments] == [0, 2]
    plog.close()


def test_delete_removes_the_directory(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    plog.append(make_batch(1), NOW)
    plog.delete()
    assert list(tmp_path.iterdir()) == []
