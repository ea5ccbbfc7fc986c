"""Builders shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import encode_batch
from kgroups.storage.log import SegmentLog

NOW = 1_700_000_000_000


def make_batch(
    count: int = 1,
    *,
    value_size: int = 10,
    timestamp: int = NOW,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = 0,
    key_prefix: bytes = b"key",
) -> bytes:
    records = [
        (key_prefix + b"-%d" % i, bytes([i % 256]) * value_size, [], timestamp + i)
        for i in range(count)
    ]
    return encode_batch(
        records,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def open_log(directory: Path, config: LogConfig | None = None, now_ms: int = NOW) -> SegmentLog:
    return SegmentLog.open(directory, config or LogConfig(), now_ms)
