"""ShareFetch's limits on the wire, as Kafka 4.2 applies them: MaxBytes and
MaxRecords of 0 ask for nothing, a negative MaxBytes is a partition error,
MinBytes holds the answer back until that many bytes are there (at most
MaxWaitMs), MaxBytes is shared among the partitions, IsRenewAck needs every
limit at 0, a member id is at most 36 characters, and BatchSize cuts the
acquired ranges where log batches start."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from client_quota_wire import alter
from cluster_brokers import create_topic, metadata, produce
from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_fetch.v2.request import FetchPartition, FetchTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, i8, i32

from broker_thread import BrokerThread
from raw_wire import call

GROUP = "limits"
MEMBER = "m1"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def connection(broker: BrokerThread) -> Iterator[socket.socket]:
    s = socket.create_connection(("127.0.0.1", broker.port), 60)
    try:
        yield s
    finally:
        s.close()


def fetch(
    s: socket.socket,
    topic_id: uuid.UUID,
    epoch: int,
    *,
    partitions: tuple[int, ...] = (0,),
    member: str = MEMBER,
    max_bytes: int = 2**31 - 1,
    min_bytes: int = 1,
    max_records: int = 500,
    wait_ms: int = 0,
    renew: bool = False,
    batch_size: int = 500,
    record_limit: bool = False,
) -> Any:
    request = ShareFetchRequest(
        group_id=GroupId(GROUP),
        member_id=member,
        share_session_epoch=i32(epoch),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=wait_ms)),
        min_bytes=i32(min_bytes),
        max_bytes=i32(max_bytes),
        max_records=i32(max_records),
        batch_size=i32(batch_size),
        share_acquire_mode=i8(1 if record_limit else 0),
        is_renew_ack=renew,
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=tuple(
                    FetchPartition(partition_index=i32(p), acknowledgement_batches=())
                    for p in partitions
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    return call(s, request)[0]


def timed_fetch(s: socket.socket, topic_id: uuid.UUID, epoch: int, **kw: Any) -> tuple[Any, float]:
    started = time.monotonic()
    response = fetch(s, topic_id, epoch, **kw)
    return response, time.monotonic() - started


def acquired(response: Any) -> dict[int, list[tuple[int, int, int]]]:
    assert response.error_code is ErrorCode.none, response.error_message
    return {
        p.partition_index: [
            (r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records
        ]
        for t in response.responses
        for p in t.partitions
        if p.acquired_records
    }


def partition_errors(response: Any) -> dict[int, ErrorCode]:
    return {p.partition_index: p.error_code for t in response.responses for p in t.partitions}


def topic(broker: BrokerThread, s: socket.socket, partitions: int = 1) -> uuid.UUID:
    """A topic whose share partitions start at 0 (a session opened on it while
    it is empty, epoch 0), the session's next epoch 1."""
    assert create_topic(broker.port, "t", partitions) is ErrorCode.none
    topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
    opened = fetch(s, topic_id, 0, partitions=tuple(range(partitions)))
    assert acquired(opened) == {}
    return topic_id


def test_max_bytes_zero_hands_out_nothing_at_once(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    assert produce(broker.port, "t", 0, b"a", b"b", b"c")[0] is ErrorCode.none
    # Not the one batch KIP-74 gives a Fetch: nothing, and no wait.
    nothing, took = timed_fetch(connection, topic_id, 1, max_bytes=0, wait_ms=10_000)
    assert acquired(nothing) == {} and took < 5
    # The records were never acquired: their first delivery comes next.
    assert acquired(fetch(connection, topic_id, 2)) == {0: [(0, 2, 1)]}


def test_max_records_zero_hands_out_nothing_at_once(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    nothing, took = timed_fetch(connection, topic_id, 1, max_records=0, wait_ms=8_000)
    assert acquired(nothing) == {} and took < 4


def test_negative_max_records_acquires_nothing_but_does_not_wait_for_records_there(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    assert produce(broker.port, "t", 0, b"a")[0] is ErrorCode.none
    nothing, took = timed_fetch(connection, topic_id, 1, max_records=-1, wait_ms=8_000)
    assert acquired(nothing) == {} and took < 4
    assert acquired(fetch(connection, topic_id, 2)) == {0: [(0, 0, 1)]}


def test_negative_max_bytes_is_an_unknown_server_error_of_each_partition(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    assert produce(broker.port, "t", 0, b"a")[0] is ErrorCode.none
    refused = fetch(connection, topic_id, 1, max_bytes=-1)
    assert refused.error_code is ErrorCode.none
    assert partition_errors(refused) == {0: ErrorCode.unknown_server_error}
    assert acquired(refused) == {}
    assert acquired(fetch(connection, topic_id, 2)) == {0: [(0, 0, 1)]}


def test_min_bytes_holds_the_answer_until_max_wait(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    assert produce(broker.port, "t", 0, b"a")[0] is ErrorCode.none
    # One small record is less than MinBytes: the records come at MaxWaitMs.
    held, took = timed_fetch(connection, topic_id, 1, min_bytes=100_000, wait_ms=1_000)
    assert took >= 0.9
    assert acquired(held) == {0: [(0, 0, 1)]}
    # MinBytes is at most MaxBytes.
    assert produce(broker.port, "t", 0, b"b")[0] is ErrorCode.none
    at_once, took = timed_fetch(
        connection, topic_id, 2, min_bytes=100_000, max_bytes=10, wait_ms=8_000
    )
    assert took < 4
    assert acquired(at_once) == {0: [(1, 1, 1)]}


def test_max_bytes_is_shared_among_the_partitions(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection, partitions=2)
    for p in (0, 1):
        assert produce(broker.port, "t", p, b"x" * 100)[0] is ErrorCode.none
    # The first partition read gets its first batch whatever its size; the
    # other gets no more than its share of MaxBytes, too little for a batch.
    small = fetch(connection, topic_id, 1, partitions=(0, 1), max_bytes=50)
    assert list(acquired(small).values()) == [[(0, 0, 1)]]
    rest = fetch(connection, topic_id, 2, partitions=(0, 1))
    assert list(acquired(rest).values()) == [[(0, 0, 1)]]


def test_a_consumer_byte_rate_quota_caps_max_bytes(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection, partitions=2)
    for p in (0, 1):
        assert produce(broker.port, "t", p, b"x" * 150)[0] is ErrorCode.none
    # 10 bytes/s over the measured windows but one: 100 bytes a fetch, too few
    # for the second partition's batch.
    assert alter(broker.port, [([("client-id", "t")], [("consumer_byte_rate", 10)])]) == [
        (ErrorCode.none, None)
    ]
    capped = fetch(connection, topic_id, 1, partitions=(0, 1))
    assert len(acquired(capped)) == 1


def test_each_fetch_of_a_session_starts_at_the_next_partition(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection, partitions=3)
    for p in (0, 1, 2):
        assert produce(broker.port, "t", p, b"x" * 100, b"y" * 100)[0] is ErrorCode.none
    # Too few bytes for more than the first partition's first batch: the
    # partition read first is the epoch's turn (epoch 1: the second, ...).
    firsts = [
        list(acquired(fetch(connection, topic_id, epoch, partitions=(0, 1, 2), max_bytes=1)))
        for epoch in (1, 2, 3)
    ]
    assert firsts == [[1], [2], [0]]


def test_an_unknown_partition_does_not_end_the_wait_of_the_others(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    response, took = timed_fetch(connection, topic_id, 1, partitions=(0, 7), wait_ms=1_000)
    assert took >= 0.9
    assert partition_errors(response)[7] is ErrorCode.unknown_topic_or_partition
    unknown, took = timed_fetch(connection, uuid.uuid4(), 2, wait_ms=1_000)
    assert took >= 0.9
    assert ErrorCode.unknown_topic_id in partition_errors(unknown).values()
    # With nothing else to wait for, the errors come at once.
    alone, took = timed_fetch(connection, uuid.uuid4(), 0, member="m2", wait_ms=8_000)
    assert took < 4
    assert list(partition_errors(alone).values()) == [ErrorCode.unknown_topic_id]


def test_renew_ack_needs_every_limit_at_zero(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    refused = fetch(connection, topic_id, 1, renew=True, wait_ms=100, max_bytes=0, max_records=0)
    assert refused.error_code is ErrorCode.invalid_request
    assert "MinBytes" in (refused.error_message or "")
    # The refused request did not use up epoch 1.
    renewed = fetch(connection, topic_id, 1, renew=True, max_bytes=0, min_bytes=0, max_records=0)
    assert renewed.error_code is ErrorCode.none


def test_a_member_id_is_at_most_36_characters(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    long_id = fetch(connection, topic_id, 0, member="m" * 37)
    assert long_id.error_code is ErrorCode.invalid_request
    assert acquired(fetch(connection, topic_id, 0, member="m" * 36)) == {}
    acknowledging = ShareAcknowledgeRequest(
        group_id=GroupId(GROUP), member_id="m" * 37, share_session_epoch=i32(1), topics=()
    )
    assert call(connection, acknowledging)[0].error_code is ErrorCode.invalid_request


def four_batches(broker: BrokerThread) -> None:
    """Log batches at offsets 0, 1, 2 and 3-4."""
    for values in ([b"a"], [b"b"], [b"c"], [b"d", b"e"]):
        assert produce(broker.port, "t", 0, *values)[0] is ErrorCode.none


def test_batch_size_cuts_acquired_ranges_where_log_batches_start(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    four_batches(broker)
    two = fetch(connection, topic_id, 1, batch_size=2)
    assert acquired(two) == {0: [(0, 1, 1), (2, 4, 1)]}


def test_batch_size_zero_cuts_at_every_log_batch(
    broker: BrokerThread, connection: socket.socket
) -> None:
    topic_id = topic(broker, connection)
    four_batches(broker)
    zero = fetch(connection, topic_id, 1, batch_size=0)
    assert acquired(zero) == {0: [(0, 0, 1), (1, 1, 1), (2, 2, 1), (3, 4, 1)]}


def test_record_limit_mode_keeps_one_range(broker: BrokerThread, connection: socket.socket) -> None:
    topic_id = topic(broker, connection)
    four_batches(broker)
    whole = fetch(connection, topic_id, 1, batch_size=1, record_limit=True)
    assert acquired(whole) == {0: [(0, 4, 1)]}
