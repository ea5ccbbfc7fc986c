"""What a client over a quota sees on the wire: the throttle time in the answer
(computed as Kafka does, on the broker's virtual clock here), the connection
muted for that long afterwards, a Fetch answered empty, a connection over its
address's rate closed unserved."""

from __future__ import annotations

import dataclasses
import socket
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from client_quota_wire import alter
from cluster_brokers import create_topic, produce
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.static.primitive import Records, i32Timedelta, i64

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode
from kgroups.handlers.dispatch import dispatch
from kgroups.handlers.throttling import Mute
from kgroups.protocol.types import BrokerId, TopicName, i16, i32
from kgroups.records.batch import encode_batch
from kgroups.security.peer import ConnectionSecurity

from broker_thread import BrokerThread
from prometheus_text import scrape
from raw_wire import call, decode_response, encode_request

CLIENT = (("client-id", "t"),)  # the raw requests' client id


@pytest.fixture
def virtual_broker(tmp_path: Path) -> Any:
    clock = ManualClock()
    # Two samples: a rate is measured over one second at least.
    b = BrokerThread(tmp_path / "data", clock=clock, quota_window_num=2).start()
    try:
        assert create_topic(b.port, "q", 1) == ErrorCode.none
        yield b, clock
    finally:
        b.stop()


def _produce_request(size: int) -> tuple[ProduceRequest, int]:
    batch = encode_batch([(None, b"x" * size, (), 1_700_000_000_000)])
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=10)),
        topic_data=(
            TopicProduceData(
                name=TopicName("q"),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )
    return request, len(encode_request(request)) - 4


def _fetch_request(max_bytes: int = 1 << 20) -> FetchRequest:
    return FetchRequest(
        cluster_id=None,
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=0)),
        min_bytes=i32(0),
        max_bytes=i32(max_bytes),
        isolation_level=cast(Any, 0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic=TopicName("q"),
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(0),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _ms(response: Any) -> int:
    return int(response.throttle_time.total_seconds() * 1000)


def test_produce_over_its_quota_is_served_then_throttled(virtual_broker: Any) -> None:
    b, _clock = virtual_broker
    request, size = _produce_request(3000)
    quota = size // 2  # the request is twice what one second allows
    assert alter(b.port, [(CLIENT, [("producer_byte_rate", quota)])])[0][0] == ErrorCode.none
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        first, _ = call(s, request)
        assert first.responses[0].partition_responses[0].error_code == ErrorCode.none
        # Kafka's throttle: (rate - bound) / bound * the window measured (1 s).
        assert _ms(first) == round((size - quota) / quota * 1000)
        started = time.monotonic()
        second, _ = call(s, request)
        # Not read until the first's throttle time had passed.
        assert time.monotonic() - started >= _ms(first) / 1000 * 0.9
        assert second.responses[0].partition_responses[0].error_code == ErrorCode.none
        assert _ms(second) > _ms(first)


def test_a_fetch_over_its_quota_is_answered_empty(virtual_broker: Any) -> None:
    b, clock = virtual_broker
    for _ in range(3):
        assert produce(b.port, "q", 0, b"y" * 2000)[0] == ErrorCode.none
    assert alter(b.port, [(CLIENT, [("consumer_byte_rate", 3000)])])[0][0] == ErrorCode.none
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        # A response may hold at most one second's quota (windows but one):
        # only the first partition's first batch goes beyond, as always.
        first, _ = call(s, _fetch_request())
        assert len(bytes(first.responses[0].partitions[0].records or b"")) < 3000
        assert _ms(first) == 0
        second, _ = call(s, _fetch_request())
        assert _ms(second) > 0
        assert second.responses == ()
    clock.advance(5000)
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        third, _ = call(s, _fetch_request())
        assert _ms(third) == 0 and third.responses[0].partitions[0].records


def test_request_percentage_throttles_any_request(virtual_broker: Any) -> None:
    b, _clock = virtual_broker
    metadata = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        assert _ms(call(s, metadata)[0]) == 0
    assert alter(b.port, [(CLIENT, [("request_percentage", 0.0001)])])[0][0] == ErrorCode.none
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        assert _ms(call(s, metadata)[0]) > 0


def test_request_percentage_throttles_heartbeats_too(virtual_broker: Any) -> None:
    """A member's heartbeats count against its request quota, however the
    broker answers them."""
    b, _clock = virtual_broker
    session = i32Timedelta.parse(timedelta(seconds=30))
    join = JoinGroupRequest(
        group_id="hb",
        session_timeout=session,
        rebalance_timeout=session,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
        reason=None,
    )
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        first = call(s, join)[0]
        joined = call(s, dataclasses.replace(join, member_id=first.member_id))[0]
        synced = call(
            s,
            SyncGroupRequest(
                group_id="hb",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=(),
            ),
        )[0]
        assert synced.error_code == ErrorCode.none
        heartbeat = HeartbeatRequest(
            group_id="hb",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
        )
        before = call(s, heartbeat)[0]
        assert before.error_code == ErrorCode.none and _ms(before) == 0
        assert alter(b.port, [(CLIENT, [("request_percentage", 0.0001)])])[0][0] == ErrorCode.none
        after = call(s, heartbeat)[0]
        assert after.error_code == ErrorCode.none and _ms(after) > 0


def test_connections_over_the_address_rate_are_closed_unserved(virtual_broker: Any) -> None:
    b, _clock = virtual_broker
    ip = (("ip", "127.0.0.1"),)
    assert alter(b.port, [(ip, [("connection_creation_rate", 1)])])[0][0] == ErrorCode.none
    metadata = MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        assert call(s, metadata)[0].brokers  # the first of the second: served
    with socket.create_connection(("127.0.0.1", b.port), 20) as s:
        s.sendall(encode_request(metadata))
        try:
            answer = s.recv(1)
        except ConnectionResetError:
            answer = b""
        assert answer == b""  # closed without an answer


def test_throttle_time_is_on_the_metrics_endpoint(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", clock=ManualClock(), metrics_port=0).start()
    try:
        assert create_topic(b.port, "q", 1) == ErrorCode.none
        request, _ = _produce_request(3000)
        assert alter(b.port, [(CLIENT, [("producer_byte_rate", 1)])])[0][0] == ErrorCode.none
        with socket.create_connection(("127.0.0.1", b.port), 20) as s:
            throttled = _ms(call(s, request)[0])
        assert throttled > 0
        assert b.broker is not None and b.broker.metrics is not None
        page = scrape(b.broker.metrics.port)
        labels = {"quota": "Produce", "user": "ANONYMOUS", "client_id": "t"}
        assert page.value("kafka_server_quota_throttle_time_ms_sum", **labels) == throttled
        assert page.value("kafka_server_quota_throttle_time_ms_count", **labels) == 1
    finally:
        b.stop()


def test_a_user_quota_applies_to_that_principal_only(virtual_broker: Any) -> None:
    b, _clock = virtual_broker
    alice = (("user", "alice"),)
    request, size = _produce_request(3000)
    assert alter(b.port, [(alice, [("producer_byte_rate", size // 2)])])[0][0] == ErrorCode.none

    def produce_as(principal: str) -> int:
        security = ConnectionSecurity("PLAINTEXT", "PLAINTEXT", principal)
        mute = Mute()
        frame = b.run(dispatch(b.broker, encode_request(request)[4:], "10.0.0.1", security, mute))
        assert frame is not None
        return _ms(decode_response(type(request), frame[4:]))

    assert produce_as("User:bob") == 0
    assert produce_as("User:alice") > 0
