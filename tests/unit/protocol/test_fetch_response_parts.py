"""A Fetch response whose records are file regions goes out byte for byte as
the same response with the records in memory would, at every Fetch version:
its parts, bytes and regions in order, make the same frame."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kio.schema.fetch.v12 import FetchResponse
from kio.schema.fetch.v12.response import (
    AbortedTransaction,
    FetchableTopicResponse,
    PartitionData,
)

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.response_parts import INLINE_BYTES, ResponseParts, encode_parts
from kgroups.protocol import apis
from kgroups.protocol.framing import frame
from kgroups.protocol.header import response_header
from kgroups.protocol.types import BrokerId, ProducerId, TopicName, i32, i64
from kgroups.records.file_region import FileRegion
from kgroups.storage.append_file import AppendFile


def _response(records: list[bytes | FileRegion]) -> FetchResponse:
    def partition(i: int, data: bytes | FileRegion) -> PartitionData:
        return PartitionData(
            partition_index=i32(i),
            error_code=ErrorCode.none,
            high_watermark=i64(1000 + i),
            last_stable_offset=i64(900 + i),
            log_start_offset=i64(i),
            aborted_transactions=(
                (AbortedTransaction(producer_id=ProducerId(7), first_offset=i64(3)),)
                if i % 2
                else None
            ),
            preferred_read_replica=BrokerId(-1),
            records=data,  # type: ignore[arg-type]
        )

    half = len(records) // 2
    return FetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            FetchableTopicResponse(
                topic=TopicName("a"),
                partitions=tuple(partition(i, r) for i, r in enumerate(records[:half])),
            ),
            FetchableTopicResponse(
                topic=TopicName("b"),
                partitions=tuple(partition(i, r) for i, r in enumerate(records[half:])),
            ),
        ),
    )


@pytest.fixture
def segment_file(tmp_path: Path) -> AppendFile:
    f = AppendFile.open(tmp_path / "00000000000000000000.log")
    f.append(os.urandom(4 * INLINE_BYTES))
    return f


@pytest.mark.parametrize("version", range(apis.SUPPORTED[apis.FETCH].min_version, 13))
def test_parts_make_the_frame_the_records_in_memory_make(
    segment_file: AppendFile, version: int
) -> None:
    regions: list[bytes | FileRegion] = [
        FileRegion(segment_file, 0, 2 * INLINE_BYTES, 10),  # sent from the file
        b"",
        FileRegion(segment_file, 5, 100, 11),  # small: read and inlined
        FileRegion(segment_file, 2 * INLINE_BYTES, INLINE_BYTES, 12),
        FileRegion(segment_file, 3 * INLINE_BYTES, INLINE_BYTES, 13),
    ]
    in_memory = [r.read() if isinstance(r, FileRegion) else r for r in regions]
    codec = apis.codec(apis.FETCH, version)
    header = response_header(5, codec.response_header_flexible)
    expected = frame(header + codec.encode_response(_response(in_memory)))  # type: ignore[arg-type]

    parts = encode_parts(codec.write_response, header, _response(regions))

    assert isinstance(parts, ResponseParts)
    assert len(parts) == len(expected)
    assert parts.to_bytes() == expected
    # The three large regions stay in the file; everything else is bytes between them
    # (after the last one too, but in versions 4-11 records are the response's last field).
    kinds = [type(p) for p in parts.parts]
    assert kinds[:6] == [bytes, FileRegion] * 3
    assert kinds[6:] == ([bytes] if codec.response_header_flexible else [])
    assert [p.size for p in parts.parts if isinstance(p, FileRegion)] == [
        2 * INLINE_BYTES,
        INLINE_BYTES,
        INLINE_BYTES,
    ]


def test_a_response_without_large_regions_is_plain_bytes(segment_file: AppendFile) -> None:
    codec = apis.codec(apis.FETCH, 12)
    header = response_header(5, True)
    region = FileRegion(segment_file, 0, INLINE_BYTES - 1, 10)
    data = region.read()
    encoded = encode_parts(codec.write_response, header, _response([region, b""]))
    expected = frame(header + codec.encode_response(_response([data, b""])))  # type: ignore[arg-type]
    assert encoded == expected


def test_the_plain_encoder_refuses_a_region(segment_file: AppendFile) -> None:
    """A path that would copy the records cannot send a frame with them missing."""
    codec = apis.codec(apis.FETCH, 12)
    with pytest.raises(TypeError):
        codec.encode_response(_response([FileRegion(segment_file, 0, 10, 1), b""]))
