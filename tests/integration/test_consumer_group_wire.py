"""ConsumerGroupHeartbeat and ConsumerGroupDescribe on the wire: what the
broker advertises, how it answers a malformed heartbeat, topic ids from its
own topics (a topic created later reaches a member subscribed to it), and
how the classic group APIs show a consumer group."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.consumer_group_describe.v1 import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v0 import (
    ConsumerGroupHeartbeatRequest as HeartbeatRequestV0,
)
from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions as HeartbeatPartitions
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.describe_groups.v5 import DescribeGroupsRequest
from kio.schema.describe_groups.v6 import DescribeGroupsRequest as DescribeGroupsRequestV6
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.list_groups.v5 import ListGroupsRequest
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, TopicName, i8, i16, i32

from broker_thread import BrokerThread
from raw_wire import call


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(timedelta(milliseconds=value))


@pytest.fixture
def wire(tmp_path: Path) -> Iterator[socket.socket]:
    broker = BrokerThread(tmp_path / "data").start()
    try:
        with socket.create_connection(("127.0.0.1", broker.broker.port), 30) as s:  # type: ignore[union-attr]
            found, _ = call(
                s, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(GroupId("g"),))
            )
            assert found.coordinators[0].error_code is ErrorCode.none
            yield s
    finally:
        broker.stop()


def _create(s: socket.socket, name: str, partitions: int) -> None:
    created, _ = call(
        s,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=timedelta(seconds=10),
            validate_only=False,
        ),
    )
    assert created.topics[0].error_code is ErrorCode.none


def _topic_id(s: socket.socket, name: str) -> Any:
    metadata, _ = call(
        s,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    return metadata.topics[0].topic_id


def _join(s: socket.socket, member_id: str, topics: tuple[str, ...], **fields: Any) -> Any:
    request = ConsumerGroupHeartbeatRequest(
        group_id=GroupId("g"),
        member_id=member_id,
        member_epoch=i32(0),
        rebalance_timeout=fields.pop("rebalance_timeout", _ms(30_000)),
        subscribed_topic_names=tuple(TopicName(t) for t in topics),
        topic_partitions=fields.pop("topic_partitions", ()),
        **fields,
    )
    response, _ = call(s, request)
    return response


def test_the_consumer_group_apis_are_advertised(wire: socket.socket) -> None:
    response, _ = call(
        wire, ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )
    ranges = {(k.api_key, k.min_version, k.max_version) for k in response.api_keys}
    assert (apis.CONSUMER_GROUP_HEARTBEAT, 0, 1) in ranges
    assert (apis.CONSUMER_GROUP_DESCRIBE, 0, 1) in ranges


def test_without_the_consumer_protocol_its_apis_are_not_served(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path / "data", **{"group.coordinator.rebalance.protocols": "classic"}
    ).start()
    try:
        with socket.create_connection(("127.0.0.1", broker.broker.port), 30) as s:  # type: ignore[union-attr]
            versions, _ = call(
                s, ApiVersionsRequest(client_software_name="t", client_software_version="1")
            )
            keys = {k.api_key for k in versions.api_keys}
            assert apis.CONSUMER_GROUP_HEARTBEAT not in keys
            answer = _join(s, "m", ("t",))
            assert answer.error_code is ErrorCode.unsupported_version
    finally:
        broker.stop()


def test_a_join_without_what_it_must_carry_is_an_invalid_request(wire: socket.socket) -> None:
    assert _join(wire, "m", ()).error_code is ErrorCode.invalid_request
    no_timeout = _join(wire, "m", ("t",), rebalance_timeout=_ms(-1))
    assert no_timeout.error_code is ErrorCode.invalid_request
    no_owned = _join(wire, "m", ("t",), topic_partitions=None)
    assert no_owned.error_code is ErrorCode.invalid_request
    unnamed = _join(wire, "", ("t",))  # v1: the member names itself
    assert unnamed.error_code is ErrorCode.invalid_request


def test_a_member_gets_the_broker_topic_ids_and_a_topic_created_later(
    wire: socket.socket,
) -> None:
    _create(wire, "first", 3)
    joined = _join(wire, "m", ("first", "later"))
    assert joined.error_code is ErrorCode.none and joined.member_epoch == 1
    assert joined.heartbeat_interval == timedelta(milliseconds=5000)
    (assigned,) = joined.assignment.topic_partitions
    assert assigned.topic_id == _topic_id(wire, "first")
    assert sorted(assigned.partitions) == [0, 1, 2]

    _create(wire, "later", 2)
    beat, _ = call(
        wire,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId("g"),
            member_id="m",
            member_epoch=i32(1),
            topic_partitions=None,
        ),
    )
    assert beat.error_code is ErrorCode.none and beat.member_epoch == 2
    got = {tp.topic_id: sorted(tp.partitions) for tp in beat.assignment.topic_partitions}
    assert got == {_topic_id(wire, "first"): [0, 1, 2], _topic_id(wire, "later"): [0, 1]}

    described, _ = call(
        wire,
        ConsumerGroupDescribeRequest(
            group_ids=(GroupId("g"), GroupId("none")), include_authorized_operations=False
        ),
    )
    group, missing = described.groups
    assert group.error_code is ErrorCode.none and group.group_state == "Stable"
    assert group.assignor_name == "uniform"
    (member,) = group.members
    assert member.client_id == "t"
    assert {tp.topic_name for tp in member.assignment.topic_partitions} == {"first", "later"}
    assert missing.error_code is ErrorCode.group_id_not_found

    listed, _ = call(wire, ListGroupsRequest(states_filter=(), types_filter=("consumer",)))
    assert [(g.group_id, g.group_type) for g in listed.groups] == [("g", "consumer")]
    classic, _ = call(wire, ListGroupsRequest(states_filter=(), types_filter=("classic",)))
    assert classic.groups == ()
    old, _ = call(
        wire, DescribeGroupsRequest(groups=(GroupId("g"),), include_authorized_operations=False)
    )
    assert old.groups[0].group_state == "Dead"

    # A deleted topic leaves the assignment at the next heartbeat.
    first_id = _topic_id(wire, "first")
    deleted, _ = call(
        wire,
        DeleteTopicsRequest(
            topics=(DeleteTopicState(name=TopicName("later"), topic_id=None),),
            timeout=timedelta(seconds=10),
        ),
    )
    assert deleted.responses[0].error_code is ErrorCode.none
    beat, _ = call(
        wire,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId("g"), member_id="m", member_epoch=i32(2), topic_partitions=None
        ),
    )
    # It is first told to give the deleted topic's partitions up ...
    assert beat.error_code is ErrorCode.none and beat.member_epoch == 2
    got = {tp.topic_id: sorted(tp.partitions) for tp in beat.assignment.topic_partitions}
    assert got == {first_id: [0, 1, 2]}
    # ... and moves on to the new epoch once it has.
    owned = (HeartbeatPartitions(topic_id=first_id, partitions=(i32(0), i32(1), i32(2))),)
    beat, _ = call(
        wire,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId("g"), member_id="m", member_epoch=i32(2), topic_partitions=owned
        ),
    )
    assert beat.error_code is ErrorCode.none and beat.member_epoch == 3


def test_a_v0_member_may_let_the_coordinator_name_it(wire: socket.socket) -> None:
    _create(wire, "t", 1)
    response, _ = call(
        wire,
        HeartbeatRequestV0(
            group_id=GroupId("g"),
            member_id="",
            member_epoch=i32(0),
            rebalance_timeout=_ms(30_000),
            subscribed_topic_names=(TopicName("t"),),
            topic_partitions=(),
        ),
    )
    assert response.error_code is ErrorCode.none
    assert response.member_id


def test_describe_groups_v6_does_not_find_a_consumer_group(wire: socket.socket) -> None:
    _create(wire, "t", 1)
    assert _join(wire, "m", ("t",)).error_code is ErrorCode.none
    for group_id in ("g", "unknown"):
        old, _ = call(
            wire,
            DescribeGroupsRequest(groups=(GroupId(group_id),), include_authorized_operations=False),
        )
        assert (old.groups[0].error_code, old.groups[0].group_state) == (ErrorCode.none, "Dead")
        new, _ = call(
            wire,
            DescribeGroupsRequestV6(
                groups=(GroupId(group_id),), include_authorized_operations=False
            ),
        )
        # Kafka 4.x: v6 names the error (KIP-1043) and still says Dead.
        assert (new.groups[0].error_code, new.groups[0].group_state) == (
            ErrorCode.group_id_not_found,
            "Dead",
        )
        assert new.groups[0].error_message == (
            "Group g is not a classic group." if group_id == "g" else "Group unknown not found."
        )


def test_consumer_group_describe_of_an_empty_group_id_is_invalid(wire: socket.socket) -> None:
    described, _ = call(
        wire,
        ConsumerGroupDescribeRequest(
            group_ids=(GroupId(""), GroupId("none")), include_authorized_operations=False
        ),
    )
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("", ErrorCode.invalid_group_id),
        ("none", ErrorCode.group_id_not_found),
    ]
