"""Timestamps of records at offsets, from their batch's header."""

from __future__ import annotations

from kgroups.records.batch import encode_batch
from kgroups.records.timestamps import timestamp_in


def _batch(timestamps: list[int], base_offset: int = 100, **kw: int) -> bytes:
    return encode_batch([(None, b"v", (), t) for t in timestamps], base_offset=base_offset, **kw)


def test_first_record_is_exact_and_inner_ones_interpolated() -> None:
    batch = _batch([1_000, 1_010, 1_020, 1_030, 1_040])
    assert timestamp_in(batch, 100) == 1_000
    assert timestamp_in(batch, 102) == 1_020
    assert timestamp_in(batch, 104) == 1_040
    # A committed offset before the batch (records compacted away): the batch's first.
    assert timestamp_in(batch, 90) == 1_000


def test_log_append_time_is_the_batch_time() -> None:
    batch = _batch([1_000, 1_010, 1_020], timestamp_type=1)
    assert timestamp_in(batch, 101) == 1_020


def test_no_timestamp_is_unknown() -> None:
    assert timestamp_in(_batch([-1, -1]), 100) is None
    assert timestamp_in(b"", 100) is None
