"""Opening a log after a crash: torn tails, bit flips, lost indexes, half-made files."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import decode_records, encode_batch, iter_batches
from kgroups.storage.log import SegmentLog

CONFIG = LogConfig(segment_bytes=3000, index_interval_bytes=100)


def crashed_log(directory: Path, batches: int = 60) -> list[int]:
    """Write batches, then drop the log without closing (like kill -9); returns
    the end offset after each batch."""
    plog = SegmentLog.open(directory, CONFIG, NOW)
    ends = []
    for i in range(batches):
        r = plog.append(make_batch(1 + i % 4, value_size=40, compression=i % 3), NOW + i)
        ends.append(r.last_offset + 1)
    return ends


def active_file(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def reopen(directory: Path) -> SegmentLog:
    return SegmentLog.open(directory, CONFIG, NOW)


def test_unclean_reopen_keeps_everything(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    ends = crashed_log(d)
    plog = reopen(d)
    assert plog.log_end_offset == ends[-1]
    plog.close()


@pytest.mark.parametrize("garbage", [b"\x00", b"\x00" * 11, b"\xff" * 70, b"x" * 500])
def test_garbage_tail_is_truncated(
    tmp_path: Path, garbage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    ends = crashed_log(d)
    path = active_file(d)
    size = path.stat().st_size
    with path.open("ab") as f:
        f.write(garbage)
    with caplog.at_level(logging.WARNING):
        plog = reopen(d)
    assert path.name in caplog.text and "truncating" in caplog.text
    assert plog.log_end_offset == ends[-1]
    assert path.stat().st_size == size
    r = plog.append(make_batch(2), NOW)
    assert r.base_offset == ends[-1]
    assert [h.base_offset for _, h in iter_batches(plog.read(ends[-2], 1 << 20))][-1] == ends[-1]
    plog.close()


def test_partial_last_batch_is_truncated(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    ends = crashed_log(d)
    path = active_file(d)
    plog = reopen(d)
    last = plog.read(ends[-2], 1 << 20)
    plog.close()
    for keep in (1, 30, len(last) - 1):
        size = path.stat().st_size
        os.truncate(path, size - len(last) + keep)
        plog = reopen(d)
        assert plog.log_end_offset == ends[-2]
        assert path.stat().st_size == size - len(last)
        plog.append(last, NOW, from_client=False)
        assert plog.log_end_offset == ends[-1]
        plog.close()


def test_bit_flip_in_last_batch_is_truncated(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    ends = crashed_log(d)
    path = active_file(d)
    plog = reopen(d)
    last_size = len(plog.read(ends[-2], 1 << 20))
    plog.close()
    data = bytearray(path.read_bytes())
    data[len(data) - last_size // 2] ^= 0x10
    path.write_bytes(bytes(data))
    plog = reopen(d)
    assert plog.log_end_offset == ends[-2]
    assert plog.append(make_batch(1), NOW).base_offset == ends[-2]
    plog.close()


def test_bit_flip_in_a_middle_batch_drops_it_and_what_follows(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    crashed_log(d)
    path = active_file(d)
    base = int(path.name[:20])
    data = bytearray(path.read_bytes())
    first = next(iter_batches(bytes(data)))[1]
    data[first.size + 70] ^= 0x01  # inside the second batch's records
    path.write_bytes(bytes(data))
    plog = reopen(d)
    assert plog.log_end_offset == first.next_offset
    assert path.stat().st_size == first.size
    assert plog.segments[-1].base_offset == base
    plog.close()


def test_lost_and_corrupt_indexes_are_rebuilt(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, CONFIG, NOW)
    for i in range(80):
        plog.append(make_batch(2, value_size=30, timestamp=NOW + i), NOW)
    expected = {o: plog.read(o, 1) for o in range(0, plog.log_end_offset, 3)}
    max_ts = plog.max_timestamp_offset()
    plog.close()
    indexes = sorted(d.glob("*.index"))
    indexes[0].unlink()
    indexes[1].write_bytes(b"\x00\x00\x00\x05")  # not a multiple of 8
    indexes[2].write_bytes((100).to_bytes(4, "big") + (10**6).to_bytes(4, "big"))
    sorted(d.glob("*.timeindex"))[3].write_bytes(b"junk")
    plog = SegmentLog.open(d, CONFIG, NOW, recover=False)
    assert {o: plog.read(o, 1) for o in expected} == expected
    assert plog.max_timestamp_offset() == max_ts
    assert len(plog.segments[0].index) > 0
    plog.close()


def test_half_made_files_are_tidied(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    ends = crashed_log(d)
    stray = [
        d / "00000000000000999999.index",  # index without a log
        d / "00000000000000000000.log.cleaned",
        d / "00000000000000000000.index.cleaned",
        d / "00000000000000000000.log.deleted",
        d / "00000000000000000123.snapshot.tmp",
    ]
    for path in stray:
        path.write_bytes(b"leftover")
    plog = reopen(d)
    assert plog.log_end_offset == ends[-1]
    for path in stray:
        assert not path.exists(), path
    plog.close()


def test_swap_file_replaces_the_segments_it_covers(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, CONFIG, NOW)
    for _ in range(40):
        plog.append(make_batch(3, value_size=40), NOW)
    plog.close()
    segments = sorted(d.glob("*.log"))
    assert len(segments) >= 4
    first, second, third = (int(p.name[:20]) for p in segments[:3])
    # A "cleaned" replacement for the first two segments: one record per batch kept.
    kept = encode_batch([(b"only", b"survivor", [], NOW)], base_offset=third - 1)
    (d / f"{first:020d}.log.swap").write_bytes(kept)
    (d / f"{first:020d}.index.swap").write_bytes(b"stale")
    plog = SegmentLog.open(d, CONFIG, NOW)
    assert [s.base_offset for s in plog.segments][:2] == [first, third]
    assert not (d / f"{second:020d}.log").exists()
    assert not list(d.glob("*.swap"))
    records = decode_records(plog.read(first, 1 << 20))
    assert [(r.offset, r.value) for r in records] == [(third - 1, b"survivor")]
    plog.close()


def test_overwritten_snapshot_and_empty_directory(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, CONFIG, NOW)
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 0)
    plog.close()
    for snapshot in d.glob("*.snapshot"):
        snapshot.write_bytes(b"garbage")
    plog = SegmentLog.open(d, CONFIG, NOW)
    assert plog.log_end_offset == 0
    plog.close()
