"""A Produce refused because of some records of a batch names every one of
them by its index in the batch (record_errors), with the partition's error
code and a message, as Kafka's log validator answers."""

from __future__ import annotations

import socket
import time
from datetime import timedelta
from typing import Any, cast

import pytest
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records
from topic_admin_wire import create

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch
from kgroups.records.compression import LZ4

from broker_thread import BrokerThread
from raw_wire import call


def _produce(port: int, topic: str, batch: bytes) -> Any:
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=timedelta(seconds=10),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )
    with socket.create_connection(("127.0.0.1", port), 30) as s:
        response, _ = call(s, request)
    return response.responses[0].partition_responses[0]


@pytest.mark.parametrize("compression", [0, LZ4])
def test_every_keyless_record_on_a_compacted_topic_is_named(
    broker: BrokerThread, compression: int
) -> None:
    create(broker.port, "compacted", 1, cleanup_policy="compact")
    keys = [None, b"k", b"k", None, b"k", None]
    batch = encode_batch([(key, b"v", [], 1) for key in keys], compression=compression)
    answer = _produce(broker.port, "compacted", batch)
    assert answer.error_code == ErrorCode.invalid_record
    assert [e.batch_index for e in answer.record_errors] == [0, 3, 5]
    assert all("key" in (e.batch_index_error_message or "") for e in answer.record_errors)
    assert answer.error_message


def test_every_record_with_a_timestamp_out_of_bounds_is_named(broker: BrokerThread) -> None:
    create(broker.port, "bounded", 1, message_timestamp_before_max_ms="60000")
    now = int(time.time() * 1000)
    stamps = [now, now - 3_600_000, now, now - 7_200_000]
    answer = _produce(broker.port, "bounded", encode_batch([(b"k", b"v", [], t) for t in stamps]))
    assert answer.error_code == ErrorCode.invalid_timestamp
    assert [e.batch_index for e in answer.record_errors] == [1, 3]


def test_a_valid_batch_has_no_record_errors(broker: BrokerThread) -> None:
    create(broker.port, "compacted", 1, cleanup_policy="compact")
    answer = _produce(broker.port, "compacted", encode_batch([(b"k", b"v", [], 1)]))
    assert answer.error_code == ErrorCode.none
    assert answer.record_errors == ()
