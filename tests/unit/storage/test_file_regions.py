"""A log's file regions hold exactly the bytes its reads return, whatever cuts
the read (max bytes, KIP-74's first batch, the end offset, a segment's end),
and name the offset that follows them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_helpers import NOW, make_batch, open_log

from kgroups.partitions.config import LogConfig
from kgroups.records.batch import iter_batches
from kgroups.records.file_region import FileRegion, RegionGone

SMALL = LogConfig(segment_bytes=4000, index_interval_bytes=200)


def _next_offset(data: bytes, fallback: int) -> int:
    found = list(iter_batches(data))
    return found[-1][1].next_offset if found else fallback


def test_regions_hold_what_reads_return(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0", SMALL)
    for i in range(120):
        plog.append(make_batch(1 + i % 4, value_size=20 + i % 90), NOW + i)
    end = plog.log_end_offset
    for offset in range(0, end, 7):
        for max_bytes in (1, 300, 1000, 5000):
            for max_offset in (None, offset + 3, end):
                for min_one in (True, False):
                    data = plog.read(offset, max_bytes, max_offset, min_one=min_one)
                    region = plog.read_region(offset, max_bytes, max_offset, min_one=min_one)
                    if not data:
                        assert region == b""
                        continue
                    assert isinstance(region, FileRegion)
                    assert len(region) == len(data)
                    assert region.read() == data
                    # Above every offset returned, at most the next batch's first.
                    last = list(iter_batches(data))[-1][1].last_offset
                    assert last < region.end_offset <= end
                    assert region.end_offset == _next_offset(data, end)
    plog.close()


def test_a_region_of_a_closed_file_is_gone(tmp_path: Path) -> None:
    plog = open_log(tmp_path / "t-0")
    plog.append(make_batch(3), NOW)
    region = plog.read_region(0, 1 << 20)
    assert isinstance(region, FileRegion)
    plog.close()
    r, w = os.pipe()
    try:
        with pytest.raises(RegionGone):
            region.source.send_to(w, region.position, region.size)
    finally:
        os.close(r)
        os.close(w)
