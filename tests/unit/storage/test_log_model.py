"""Random operation sequences against a plain in-memory model of the log."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from storage_helpers import NOW

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import decode_records, encode_batch, iter_batches
from kgroups.storage.log import SegmentLog

Batch = tuple[int, int, list[tuple[bytes | None, bytes | None, int]]]


class Model:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.start = 0
        self.end = 0

    def append(self, records: list[tuple[bytes | None, bytes | None, int]]) -> None:
        self.batches.append((self.end, self.end + len(records) - 1, records))
        self.end += len(records)

    def truncate(self, offset: int) -> None:
        if offset >= self.end:
            return
        if offset <= self.start:
            self.batches, self.start, self.end = [], offset, offset
            return
        self.batches = [b for b in self.batches if b[1] < offset]
        self.end = self.batches[-1][1] + 1 if self.batches else self.start

    def drop_before(self, start: int) -> None:
        self.batches = [b for b in self.batches if b[0] >= start]
        self.start = start


def check(plog: SegmentLog, model: Model, rng: random.Random) -> None:
    assert (plog.log_start_offset, plog.log_end_offset) == (model.start, model.end)
    offset = model.start
    seen: list[Batch] = []
    while offset < model.end:
        data = plog.read(offset, rng.choice([1, 500, 5000, 1 << 20]))
        found = list(iter_batches(data))
        assert found and sum(h.size for _, h in found) == len(data)
        for pos, header in found:
            records = decode_records(data[pos : pos + header.size])
            seen.append(
                (
                    header.base_offset,
                    header.last_offset,
                    [(r.key, r.value, r.timestamp) for r in records],
                )
            )
        offset = found[-1][1].next_offset
    assert seen == model.batches


def crash(plog: SegmentLog) -> None:
    """Drop the log like kill -9 would: no seal, no snapshot, no fsync."""
    for segment in plog.segments:
        segment.close()


@pytest.mark.parametrize("seed", range(8))
def test_random_operations_match_the_model(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    config = LogConfig(
        segment_bytes=rng.choice([2000, 4000, 8000]),
        index_interval_bytes=rng.choice([0, 100, 1000]),
    )
    d = tmp_path / "t-0"
    plog = SegmentLog.open(d, config, NOW)
    model = Model()
    for _step in range(300):
        op = rng.random()
        if op < 0.75:
            records: list[tuple[bytes | None, bytes | None, int]] = [
                (
                    rng.choice([None, b"k%d" % rng.randrange(10)]),
                    rng.choice([None, rng.randbytes(rng.randrange(200))]),
                    NOW + rng.randrange(10_000),
                )
                for _ in range(rng.randint(1, 5))
            ]
            batch = encode_batch(
                [(k, v, [], ts) for k, v, ts in records], compression=rng.randrange(5)
            )
            result = plog.append(batch, NOW)
            assert result.base_offset == model.end
            model.append(records)
        elif op < 0.82:
            check(plog, model, rng)
        elif op < 0.87:
            target = rng.randint(max(0, model.start - 2), model.end + 1)
            plog.truncate_to(target)
            model.truncate(target)
        elif op < 0.91:
            plog.update_config(
                LogConfig(**{**_fields(config), "retention_bytes": rng.randrange(5000)})
            )
            plog.apply_retention(NOW)
            plog.update_config(config)
            model.drop_before(plog.log_start_offset)
        elif op < 0.96:
            plog.close()
            plog = SegmentLog.open(d, config, NOW, recover=False)
        else:
            crash(plog)
            if rng.random() < 0.5:
                active = sorted(d.glob("*.log"))[-1]
                with active.open("ab") as f:
                    f.write(rng.randbytes(rng.randrange(1, 100)))
            plog = SegmentLog.open(d, config, NOW)
    check(plog, model, rng)
    plog.close()


def _fields(config: LogConfig) -> dict[str, object]:
    return {
        "segment_bytes": config.segment_bytes,
        "index_interval_bytes": config.index_interval_bytes,
    }
