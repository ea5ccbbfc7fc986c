"""A KIP-848 member's unchanged ConsumerGroupHeartbeat through a real
connection: answered on the spot as the general path would, and not while a
fault is set."""

from __future__ import annotations

import datetime
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.static.primitive import i32, i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, TopicName
from kgroups.testing import EmbeddedBroker

from raw_wire import call


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _stats(broker: EmbeddedBroker) -> Any:
    impl = broker._impl
    assert impl.broker is not None  # type: ignore[union-attr]
    return impl.broker.stats  # type: ignore[union-attr]


def _beat(epoch: int, **fields: Any) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=GroupId("g"), member_id="member-a", member_epoch=i32(epoch), **fields
    )


def test_an_unchanged_heartbeat_is_answered_on_the_spot_unless_a_fault_is_set(
    broker: EmbeddedBroker,
) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), 30) as s:
        joined, _ = call(
            s,
            _beat(
                0,
                rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                subscribed_topic_names=(TopicName("nothing-yet"),),
                topic_partitions=(),
            ),
        )
        assert joined.error_code is ErrorCode.none
        epoch = joined.member_epoch
        stats = _stats(broker)
        general_seconds = stats.request_seconds[apis.CONSUMER_GROUP_HEARTBEAT]
        for _ in range(3):
            beat, _ = call(s, _beat(epoch, topic_partitions=None))
            assert (beat.error_code, beat.member_id, beat.member_epoch, beat.assignment) == (
                ErrorCode.none,
                "member-a",
                epoch,
                None,
            )
            assert beat.heartbeat_interval == joined.heartbeat_interval
        # None of them went through the general path, which times its requests.
        assert stats.request_seconds[apis.CONSUMER_GROUP_HEARTBEAT] == general_seconds

        broker.faults.coordinator_error(group="g", error="NOT_COORDINATOR")
        try:
            faulted, _ = call(s, _beat(epoch, topic_partitions=None))
            assert faulted.error_code is ErrorCode.not_coordinator
        finally:
            broker.faults.clear()
        again, _ = call(s, _beat(epoch, topic_partitions=None))
        assert again.error_code is ErrorCode.none and again.member_epoch == epoch
