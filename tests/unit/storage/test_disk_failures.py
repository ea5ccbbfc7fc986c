"""A disk that fails under a log: a refused append leaves the log as it was, a log
that cannot be put back goes offline, and nothing acknowledged is lost or has its
offset reused, before or after a restart."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from faulty_disk import FaultyDisk
from storage_helpers import NOW, make_batch

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.records.batch import decode_records, encode_batch, iter_batches
from kgroups.storage.log import SegmentLog

# An index entry after every batch, so every append writes all three files.
CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=0)


def values(plog: SegmentLog) -> list[tuple[int, bytes | None]]:
    """Every record of the log, as ``(offset, value)``."""
    out: list[tuple[int, bytes | None]] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 24)
        for pos, header in iter_batches(data):
            out += [(r.offset, r.value) for r in decode_records(data[pos : pos + header.size])]
            offset = header.last_offset + 1
    return out


def batch(tag: int) -> bytes:
    return make_batch(1, value_size=30, key_prefix=b"k%d" % tag)


def crash(plog: SegmentLog) -> None:
    """Drop the log like kill -9: files closed, nothing flushed or snapshotted."""
    for segment in plog.segments:
        segment.close()


def reopen(directory: Path) -> SegmentLog:
    return SegmentLog.open(directory, CONFIG, NOW)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FaultyDisk:
    return FaultyDisk(monkeypatch, tmp_path)


def storage_error(exc: pytest.ExceptionInfo[KafkaError]) -> bool:
    return exc.value.error_code == ErrorCode.kafka_storage_error


@pytest.mark.parametrize("file", [".log", ".index", ".timeindex"])
@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO])
def test_a_refused_append_leaves_the_log_as_it_was(
    tmp_path: Path, disk: FaultyDisk, file: str, error: int
) -> None:
    d = tmp_path / "t-0"
    plog = reopen(d)
    acked = [
        plog.append(make_batch(1, value_size=30, timestamp=NOW + i), NOW).base_offset
        for i in range(3)
    ]
    before = values(plog)
    sizes = [f.size for f in plog.segments[-1].files()]
    disk.fail("write", error, name_contains=file)
    with pytest.raises(KafkaError) as exc:
        plog.append(make_batch(1, value_size=99, timestamp=NOW + 3), NOW)
    assert storage_error(exc)
    assert disk.injected == 1
    assert values(plog) == before and plog.log_end_offset == 3
    assert [f.size for f in plog.segments[-1].files()] == sizes
    # The disk has room again: the next batch takes the refused one's offset.
    acked.append(plog.append(make_batch(1, value_size=31, timestamp=NOW + 4), NOW).base_offset)
    assert acked == [0, 1, 2, 3]
    expected = values(plog)
    crash(plog)
    plog = reopen(d)
    assert values(plog) == expected
    assert [len(v or b"") for _, v in expected] == [30, 30, 30, 31]
    plog.close()


def test_a_refused_coordinator_append_raises_and_leaves_the_log_as_it_was(
    tmp_path: Path, disk: FaultyDisk
) -> None:
    plog = reopen(tmp_path / "__consumer_offsets-0")
    plog.append_records([(b"a", b"1", (), NOW)], NOW)
    disk.fail("write", name_contains=".index")
    with pytest.raises(KafkaError) as exc:
        plog.append_records([(b"b", b"2", (), NOW)], NOW)
    assert storage_error(exc)
    assert plog.log_end_offset == 1
    assert plog.append_records([(b"c", b"3", (), NOW)], NOW).base_offset == 1
    assert values(plog) == [(0, b"1"), (1, b"3")]
    plog.close()


def test_a_refused_roll_leaves_the_log_as_it_was(tmp_path: Path, disk: FaultyDisk) -> None:
    d = tmp_path / "t-0"
    plog = reopen(d)
    while len(plog.segments) == 1:
        plog.append(batch(0), NOW)
    end = plog.log_end_offset
    segment_end = plog.segments[-1].size
    while plog.segments[-1].size + 200 < CONFIG.segment_bytes:
        plog.append(batch(0), NOW)
    end, segment_end = plog.log_end_offset, plog.segments[-1].size
    disk.fail("open", errno.EMFILE, times=None)
    for _ in range(3):
        with pytest.raises(KafkaError) as exc:
            plog.append(make_batch(1, value_size=300), NOW)
        assert storage_error(exc)
    assert plog.log_end_offset == end and len(plog.segments) == 2
    assert plog.segments[-1].size == segment_end
    disk.heal()
    assert plog.append(make_batch(1, value_size=300), NOW).base_offset == end
    assert len(plog.segments) == 3
    expected = values(plog)
    crash(plog)
    plog = reopen(d)
    assert values(plog) == expected
    plog.close()


def test_a_log_that_cannot_be_put_back_goes_offline(
    tmp_path: Path, disk: FaultyDisk, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    plog = reopen(d)
    for _ in range(3):
        plog.append(batch(1), NOW)
    expected = values(plog)
    # A read-only remount: the index write fails, and so does cutting the log back.
    disk.fail("write", errno.EROFS, name_contains=".index")
    disk.fail("ftruncate", errno.EROFS, times=None)
    with pytest.raises(KafkaError) as exc:
        plog.append(batch(2), NOW)
    assert storage_error(exc)
    assert "offline" in caplog.text
    disk.heal()
    # Offline: neither appends nor reads, even once the disk works again.
    with pytest.raises(KafkaError) as exc:
        plog.append(batch(3), NOW)
    assert storage_error(exc)
    with pytest.raises(KafkaError) as exc:
        plog.read(0, 1 << 20)
    assert storage_error(exc)
    with pytest.raises(KafkaError):
        plog.close()  # not a clean close: the next open recovers
    plog = reopen(d)
    # What was acknowledged is there; what was refused may be, after it, never in its place.
    assert values(plog)[:3] == expected
    assert plog.append(batch(4), NOW).base_offset == plog.log_end_offset - 1
    plog.close()


def test_a_half_written_batch_that_cannot_be_cut_off_takes_the_log_offline(
    tmp_path: Path, disk: FaultyDisk
) -> None:
    d = tmp_path / "t-0"
    plog = reopen(d)
    plog.append(batch(1), NOW)
    disk.fail("write", errno.EIO, name_contains=".log")
    disk.fail("ftruncate", errno.EIO)
    with pytest.raises(KafkaError) as exc:
        plog.append(batch(2), NOW)
    assert storage_error(exc)
    with pytest.raises(KafkaError) as exc:
        plog.append(batch(3), NOW)
    assert storage_error(exc)
    assert plog.offline
    crash(plog)


def test_produce_until_the_disk_is_full_then_restart(tmp_path: Path, disk: FaultyDisk) -> None:
    """Every file write fails at random once "full"; acknowledged offsets are unique
    and all read back after a crash."""
    import random

    rng = random.Random(3)
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, LogConfig(segment_bytes=3000, index_interval_bytes=50), NOW)
    acked: dict[int, bytes] = {}
    for i in range(600):
        if i % 7 == 0:
            disk.heal()
            if rng.random() < 0.5:
                file = rng.choice([".log", ".index", ".timeindex", ""])
                call = rng.choice(["write", "write", "open"])
                disk.fail(call, errno.ENOSPC, name_contains=file, times=rng.randint(1, 3))
        value = b"v%d" % i
        try:
            result = plog.append(encode_batch([(b"k", value, [], NOW + i)]), NOW + i)
        except KafkaError as exc:
            assert exc.error_code == ErrorCode.kafka_storage_error
            continue
        assert result.base_offset not in acked
        acked[result.base_offset] = value
    disk.heal()
    assert disk.injected > 20
    crash(plog)
    plog = SegmentLog.open(d, LogConfig(segment_bytes=3000, index_interval_bytes=50), NOW)
    stored = values(plog)
    assert len(stored) == len(acked)
    assert dict(stored) == {offset: value for offset, value in acked.items()}
    plog.close()


def test_a_failed_fsync_takes_the_log_offline(tmp_path: Path, disk: FaultyDisk) -> None:
    plog = reopen(tmp_path / "t-0")
    plog.append(batch(1), NOW)
    disk.fail("fdatasync", errno.EIO)
    with pytest.raises(KafkaError) as exc:
        plog.flush()
    assert storage_error(exc)
    assert plog.offline and not plog.needs_flush(NOW + 10**9)
    with pytest.raises(KafkaError) as exc:
        plog.append(batch(2), NOW)
    assert storage_error(exc)
    with pytest.raises(KafkaError):
        plog.close()


def test_no_descriptor_for_an_fsync_fails_the_flush_but_not_the_log(
    tmp_path: Path, disk: FaultyDisk
) -> None:
    plog = reopen(tmp_path / "t-0")
    plog.append(batch(1), NOW)
    disk.fail("dup", errno.EMFILE)
    with pytest.raises(KafkaError) as exc:
        plog.flush()
    assert storage_error(exc)
    assert not plog.offline and plog.flushes.unflushed == 1
    plog.flush()
    assert plog.flushes.unflushed == 0 and plog.flushes.recovery_point == 1
    plog.close()
