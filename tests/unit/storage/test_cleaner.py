"""What compaction keeps, drops and preserves, as a consumer reading the log sees it."""

from __future__ import annotations

import os
from pathlib import Path

from compaction_helpers import (
    COMPACT,
    HOUR,
    all_records,
    clean,
    key_values,
    open_compacted,
    roll,
    write_segments,
)
from storage_helpers import NOW, make_batch

from kgroups.records.batch import decode_records, encode_batch, iter_batches, read_header
from kgroups.storage.cleaner import LogCleaner
from kgroups.storage.log import SegmentLog
from kgroups.storage.producer_snapshots import delete_snapshots


def test_keeps_only_the_newest_record_of_each_key_across_segments(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(
        plog,
        [
            [(b"a", b"a1"), (b"b", b"b1"), (b"c", b"c1")],  # offsets 0-2
            [(b"a", b"a2"), (b"b", b"b2")],  # 3-4
            [(b"a", b"a3"), (b"d", b"d1")],  # 5-6
        ],
    )
    roll(plog, 3)  # 7
    end = plog.log_end_offset
    assert len(plog.segments) == 4
    result = clean(plog)
    assert key_values(all_records(plog)) == [
        (2, b"c", b"c1"),
        (4, b"b", b"b2"),
        (5, b"a", b"a3"),
        (6, b"d", b"d1"),
        (7, b"roll", b"r"),
    ]
    # Offsets keep their places: start, end and the gaps between.
    assert (plog.log_start_offset, plog.log_end_offset) == (0, end)
    assert [s.base_offset for s in plog.segments] == [0, 7]
    assert (result.stats.records_read, result.stats.records_kept) == (7, 4)
    assert result.stats.bytes_written < result.stats.bytes_read
    plog.close()


def test_the_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, [[(b"a", b"a1"), (b"a", b"a2")]])
    roll(plog, 1)
    plog.append_records([(b"a", b"a3", (), NOW + 2 * HOUR + 1)], NOW)
    plog.append_records([(b"a", b"a4", (), NOW + 2 * HOUR + 2)], NOW)
    active = plog.segments[-1]
    before = active.read(0, active.size)
    clean(plog)
    # a2 stays: only closed segments are mapped, so a3/a4 do not count yet.
    assert key_values(all_records(plog)) == [
        (1, b"a", b"a2"),
        (2, b"roll", b"r"),
        (3, b"a", b"a3"),
        (4, b"a", b"a4"),
    ]
    assert plog.segments[-1] is active
    assert active.read(0, active.size) == before
    plog.close()


def test_reads_at_removed_offsets_start_at_the_next_batch(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, [[(b"k%d" % (i % 3), b"v%d" % i) for i in range(12)]])
    roll(plog, 1)  # 12
    clean(plog)
    survivors = [r.offset for r in all_records(plog)]
    assert survivors == [9, 10, 11, 12]
    for offset in range(plog.log_end_offset):
        first = next(iter_batches(plog.read(offset, 1 << 20)))[1]
        assert first.base_offset == min(s for s in survivors if s >= offset), offset
    assert plog.log_start_offset == 0
    plog.close()


def test_keyless_records_are_dropped_and_the_segment_still_ends_where_it_did(
    tmp_path: Path,
) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(
        plog,
        [
            [(None, b"x"), (b"a", b"a1"), (None, b"y")],  # 0-2
            [(b"b", b"b1"), (None, b"z")],  # 3-4: the last record has no key
        ],
    )
    roll(plog, 2)  # 5
    clean(plog)
    assert key_values(all_records(plog)) == [(1, b"a", b"a1"), (3, b"b", b"b1"), (5, b"roll", b"r")]
    # The cleaned segment ends with an empty batch holding offset 4, so it still
    # covers offsets 0-4 (crash recovery of a swap relies on that).
    cleaned = plog.segments[0]
    assert cleaned.next_offset == 5
    data = cleaned.read(0, cleaned.size)
    last = list(iter_batches(data))[-1][1]
    assert (last.base_offset, last.last_offset, last.records_count) == (4, 4, 0)
    empty = plog.read(4, 1 << 20)
    assert read_header(empty).records_count == 0 and decode_records(empty) == []
    plog.close()


def test_tombstones_stay_for_delete_retention_after_their_first_cleaning(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(
        plog,
        [
            [(b"a", b"a1"), (b"b", b"b1")],  # 0-1
            [(b"a", None)],  # 2: deletes a
            [(b"c", b"c1")],  # 3
        ],
    )
    # However old, a tombstone is kept by the cleaning that first sees it.
    for segment in plog.segments[:-1]:
        os.utime(segment.log.path, ns=(0, 0))
    roll(plog, 3)  # 4
    clean(plog, NOW)
    assert key_values(all_records(plog)) == [
        (1, b"b", b"b1"),
        (2, b"a", None),
        (3, b"c", b"c1"),
        (4, b"roll", b"r"),
    ]
    # The cleaned segment is last modified at T; delete.retention.ms is an hour.
    t = NOW + 10 * HOUR
    cleaned = plog.segments[0].log.path
    os.utime(cleaned, ns=(t * 1_000_000, t * 1_000_000))
    clean(plog, t + HOUR)
    assert (2, b"a", None) in key_values(all_records(plog))
    clean(plog, t + HOUR + 1)
    # Gone, and a1 does not come back.
    assert key_values(all_records(plog)) == [(1, b"b", b"b1"), (3, b"c", b"c1"), (4, b"roll", b"r")]
    plog.close()


def test_a_new_value_after_a_tombstone_survives(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, [[(b"a", b"a1"), (b"a", None), (b"a", b"a2")]])
    roll(plog, 1)
    clean(plog, NOW + 100 * HOUR)
    clean(plog, NOW + 200 * HOUR)
    assert key_values(all_records(plog)) == [(2, b"a", b"a2"), (3, b"roll", b"r")]
    plog.close()


def test_compressed_batches_keep_their_codec_offsets_and_last_offset(tmp_path: Path) -> None:
    plog = open_compacted(tmp_path / "t-0")
    records = [(b"k%d" % i, b"v%d" % i * 20, (), NOW + i) for i in range(6)]
    plog.append(encode_batch(records, compression=1), NOW, from_client=False)  # 0-5, gzip
    write_segments(plog, [[], [(b"k0", b"new"), (b"k5", b"new")]])  # 6-7
    roll(plog, 2)
    clean(plog)
    data = plog.read(0, 1 << 20)
    header = read_header(data)
    assert header.compression == 1
    assert (header.base_offset, header.last_offset, header.records_count) == (0, 5, 4)
    assert [(r.offset, r.key) for r in decode_records(data[: header.size])] == [
        (1, b"k1"),
        (2, b"k2"),
        (3, b"k3"),
        (4, b"k4"),
    ]
    assert header.max_timestamp == NOW + 4
    plog.close()


def test_indexes_of_cleaned_segments_are_written_and_usable(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    write_segments(plog, [[(b"k%03d" % (i % 150), b"v" * 30) for i in range(600)]] * 2)
    roll(plog, 2)
    clean(plog)
    cleaned = plog.segments[0]
    assert len(cleaned.index) > 10
    assert cleaned.index.path.stat().st_size == len(cleaned.index) * 8
    survivors = [r.offset for r in all_records(plog)]
    expected = {o: plog.read(o, 1) for o in survivors}
    assert all(read_header(data).base_offset == o for o, data in expected.items())
    plog.close()
    # Loaded from disk, then rebuilt from the log: the same answers.
    plog = SegmentLog.open(d, COMPACT, NOW, recover=False)
    assert len(plog.segments[0].index) == len(cleaned.index)
    assert {o: plog.read(o, 1) for o in survivors} == expected
    plog.close()
    for index in d.glob("*.index"):
        index.unlink()
    plog = SegmentLog.open(d, COMPACT, NOW, recover=False)
    assert {o: plog.read(o, 1) for o in survivors} == expected
    plog.close()


def test_an_active_producers_last_batch_keeps_its_header(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = open_compacted(d)
    for seq in range(0, 9, 3):
        plog.append(
            make_batch(3, producer_id=7, producer_epoch=2, base_sequence=seq, timestamp=NOW + seq),
            NOW,
        )  # offsets 0-8, keys key-0..key-2 each time
    write_segments(plog, [[], [(b"key-0", b"x"), (b"key-1", b"x"), (b"key-2", b"x")]])
    roll(plog, 2)
    clean(plog)
    batches = [h for _, h in iter_batches(plog.segments[0].read(0, plog.segments[0].size))]
    kept = [(h.base_offset, h.last_offset, h.records_count, h.base_sequence) for h in batches]
    # Every producer record is superseded; its last batch stays as an empty one.
    assert kept[0] == (6, 8, 0, 6)
    assert all(h.producer_id == -1 for h in batches[1:])
    plog.close()
    delete_snapshots(d, below=1 << 62)  # rebuild producer state from the log alone
    plog = open_compacted(d)
    entry = plog.producers.get(7)
    assert entry is not None and (entry.epoch, entry.last_seq) == (2, 8)
    retry = make_batch(3, producer_id=7, producer_epoch=2, base_sequence=6, timestamp=NOW + 6)
    assert plog.append(retry, NOW).duplicate
    follow_up = make_batch(1, producer_id=7, producer_epoch=2, base_sequence=9)
    assert not plog.append(follow_up, NOW).duplicate
    plog.close()


def test_small_cleaned_segments_are_merged_up_to_segment_bytes(tmp_path: Path) -> None:
    config = COMPACT.with_overrides({"segment.bytes": "2000"})
    plog = open_compacted(tmp_path / "t-0", config)
    for i in range(300):
        plog.append_records([(b"k%d" % (i % 4), b"v" * 40, (), NOW + i)], NOW)
    roll(plog, 1)
    closed = len(plog.segments) - 1
    assert closed > 10
    clean(plog)
    assert len(plog.segments) == 2
    assert [r.key for r in all_records(plog)][:-1] == [b"k0", b"k1", b"k2", b"k3"]
    # Segments that keep a lot are merged only while the result fits segment.bytes.
    for i in range(300):
        plog.append_records([(b"k%d" % i, b"v" * 40, (), NOW + 2 * HOUR + i)], NOW)
    roll(plog, 2)
    clean(plog)
    sizes = [s.size for s in plog.segments[:-1]]
    assert max(sizes) <= 2000 and len(sizes) > 5
    plog.close()


def test_cleaned_segments_keep_the_modification_time_of_what_they_replace(
    tmp_path: Path,
) -> None:
    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, [[(b"a", b"1")], [(b"a", b"2")], [(b"b", b"1")]])
    roll(plog, 3)
    for i, segment in enumerate(plog.segments[:-1]):
        os.utime(segment.log.path, ns=(0, (NOW + i * HOUR) * 1_000_000))
    clean(plog)
    assert plog.segments[0].log.path.stat().st_mtime_ns == (NOW + 2 * HOUR) * 1_000_000
    plog.close()


def test_a_full_offset_map_cleans_part_of_the_log_per_round(tmp_path: Path) -> None:
    segments = [
        [(b"k%d" % ((s * 5 + i) % 7), b"%d-%d" % (s, i)) for i in range(5)] for s in range(6)
    ]
    expected_log = open_compacted(tmp_path / "expected-0")
    write_segments(expected_log, segments)
    roll(expected_log, len(segments))
    clean(expected_log)
    expected = key_values(all_records(expected_log))
    expected_log.close()

    plog = open_compacted(tmp_path / "t-0")
    write_segments(plog, segments)
    active = roll(plog, len(segments))
    cleaner = LogCleaner(max_map_entries=4)
    checkpoints = []
    while len(checkpoints) < 20:
        result = clean(plog, cleaner=cleaner)
        checkpoints.append(result.clean_offset)
        if result.clean_offset == active:
            break
    # Each round mapped at most four keys, so it took several, each one further on.
    assert len(checkpoints) > 3
    assert checkpoints == sorted(set(checkpoints))
    # Records beyond a round's map were left for later, and the end result is the same.
    clean(plog, cleaner=cleaner)
    assert key_values(all_records(plog)) == expected
    plog.close()
