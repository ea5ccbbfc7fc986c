"""Produce responses are the bytes kio writes, in every version served."""

from __future__ import annotations

import datetime
from datetime import timedelta
from io import BytesIO
from typing import Any

import pytest
from kio.schema.produce.v9 import ProduceResponse
from kio.schema.produce.v9.response import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.produce_response import produce_response_encoder
from kgroups.protocol.types import TopicName, i32, i64


def _partition(index: int, **fields: Any) -> PartitionProduceResponse:
    values: dict[str, Any] = {
        "index": i32(index),
        "error_code": ErrorCode.none,
        "base_offset": i64(index * 1000),
        "log_append_time": None,
        "log_start_offset": i64(index),
        "record_errors": (),
        "error_message": None,
    }
    values.update(fields)
    return PartitionProduceResponse(**values)


RESPONSES = [
    ProduceResponse(responses=(), throttle_time=i32Timedelta.parse(timedelta(0))),
    ProduceResponse(
        responses=tuple(
            TopicProduceResponse(
                name=TopicName(f"topic-{t}"),
                partition_responses=tuple(_partition(p) for p in range(4)),
            )
            for t in range(21)
        ),
        throttle_time=i32Timedelta.parse(timedelta(0)),
    ),
    ProduceResponse(
        responses=(
            TopicProduceResponse(
                name=TopicName("ünïcode-" + "x" * 200),
                partition_responses=(
                    _partition(
                        0,
                        log_append_time=datetime.datetime(
                            2026, 1, 2, 3, 4, 5, 678000, datetime.UTC
                        ),
                        base_offset=i64(2**40),
                    ),
                    _partition(
                        1,
                        error_code=ErrorCode.invalid_record,
                        base_offset=i64(-1),
                        log_start_offset=i64(-1),
                        record_errors=(
                            BatchIndexAndErrorMessage(
                                batch_index=i32(3), batch_index_error_message="no key"
                            ),
                            BatchIndexAndErrorMessage(
                                batch_index=i32(200), batch_index_error_message=None
                            ),
                        ),
                        error_message="One or more records have been rejected",
                    ),
                    _partition(2, error_code=ErrorCode.not_leader_or_follower, error_message=""),
                ),
            ),
        ),
        throttle_time=i32Timedelta.parse(timedelta(milliseconds=1234)),
    ),
]


@pytest.mark.parametrize("version", range(3, 10))
@pytest.mark.parametrize("response", RESPONSES)
def test_the_bytes_kio_writes(version: int, response: ProduceResponse) -> None:
    codec = apis.codec(apis.PRODUCE, version)
    kio_bytes = BytesIO()
    entity_writer(codec.response_type)(kio_bytes, response)
    assert produce_response_encoder(version)(response) == kio_bytes.getvalue()
    assert codec.encode_response(response) == kio_bytes.getvalue()
