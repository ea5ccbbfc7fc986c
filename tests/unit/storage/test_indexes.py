"""Offset and time indexes: Kafka's file formats, lookups, validation on load."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kgroups.storage.index import IndexCorruptError, OffsetIndex
from kgroups.storage.time_index import TimeIndex


def test_offset_index_file_format_and_lookup(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000001000.index"
    index = OffsetIndex.create(path, 1000, 1 << 20)
    for relative, position in [(5, 100), (9, 250), (20, 900)]:
        index.append(1000 + relative, position)
    index.append(1015, 950)  # going backwards is ignored
    assert path.read_bytes() == struct.pack(">iiiiii", 5, 100, 9, 250, 20, 900)
    assert [index.lookup(o) for o in (1000, 1004, 1005, 1008, 1009, 1019, 1020, 10**6)] == [
        0,
        0,
        100,
        100,
        250,
        250,
        900,
        900,
    ]
    assert index.entry_at_or_before_position(249) == 100
    assert index.entry_at_or_before_position(250) == 250
    index.close()

    loaded = OffsetIndex.load(path, 1000, 1 << 20, log_size=1000)
    assert len(loaded) == 3 and loaded.last_offset == 1020
    loaded.truncate_to_position(250)
    assert len(loaded) == 1
    assert path.read_bytes() == struct.pack(">ii", 5, 100)
    loaded.close()


@pytest.mark.parametrize(
    "content",
    [
        b"\x00" * 7,
        struct.pack(">iiii", 5, 100, 5, 200),  # offsets not increasing
        struct.pack(">iiii", 5, 100, 6, 100),  # positions not increasing
        struct.pack(">ii", 5, 5000),  # beyond the log
        struct.pack(">ii", -1, 0),
    ],
)
def test_inconsistent_offset_index_is_rejected(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(content)
    with pytest.raises(IndexCorruptError):
        OffsetIndex.load(path, 0, 1 << 20, log_size=1000)


def test_offset_index_fills_up(tmp_path: Path) -> None:
    index = OffsetIndex.create(tmp_path / "x.index", 0, 24)
    for i in range(3):
        assert not index.is_full
        index.append(i + 1, i * 10 + 1)
    assert index.is_full
    index.close()


def test_time_index(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.timeindex"
    index = TimeIndex.create(path, 100, 1 << 20)
    assert index.last_entry == (-1, 100)
    index.maybe_append(1000, 110)
    index.maybe_append(1000, 120)  # same timestamp: skipped
    index.maybe_append(900, 130)  # older: skipped
    index.maybe_append(2000, 140)
    assert path.read_bytes() == struct.pack(">qiqi", 1000, 10, 2000, 40)
    assert index.last_entry == (2000, 140)
    assert [index.lookup(ts) for ts in (0, 1000, 1001, 2000, 5000)] == [100, 100, 110, 110, 140]
    index.close()
    loaded = TimeIndex.load(path, 100, 1 << 20)
    assert loaded.last_entry == (2000, 140)
    loaded.truncate_to_offset(140)
    assert loaded.last_entry == (1000, 110)
    loaded.close()
    path.write_bytes(struct.pack(">qiqi", 2000, 10, 1000, 40))
    with pytest.raises(IndexCorruptError):
        TimeIndex.load(path, 100, 1 << 20)


def test_both_indexes_reach_their_files_on_create_reset_rename_and_fill(tmp_path: Path) -> None:
    stale = tmp_path / "stale"
    stale.write_bytes(b"\x01" * 24)
    offsets = OffsetIndex.create(stale, 0, 16)  # an existing file is emptied; two entries fit
    times = TimeIndex.create(tmp_path / "t", 0, 24)
    assert stale.read_bytes() == b"" and len(offsets) == 0
    offsets.append(3, 10)
    offsets.append(7, 20)
    times.maybe_append(50, 3)
    times.maybe_append(60, 7)
    assert offsets.is_full and times.is_full
    offsets.rename(tmp_path / "moved.index")
    times.rename(tmp_path / "moved.timeindex")
    assert (tmp_path / "moved.index").read_bytes() == struct.pack(">iiii", 3, 10, 7, 20)
    assert (tmp_path / "moved.timeindex").read_bytes() == struct.pack(">qiqi", 50, 3, 60, 7)
    offsets.reset()
    times.reset()
    assert len(offsets) == len(times) == 0 and not offsets.is_full
    assert offsets.path.read_bytes() == times.path.read_bytes() == b""
    offsets.close()
    times.close()
    (tmp_path / "bad").write_bytes(b"\x00" * 13)  # no whole number of entries of either
    with pytest.raises(IndexCorruptError, match="multiple of 8"):
        OffsetIndex.load(tmp_path / "bad", 0, 1 << 20, log_size=100)
    with pytest.raises(IndexCorruptError, match="multiple of 12"):
        TimeIndex.load(tmp_path / "bad", 0, 1 << 20)
