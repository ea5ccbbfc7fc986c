"""DescribeTopicPartitions (KIP-966) on a broker alone: topics in name order,
pages of at most response_partition_limit partitions with a next cursor, and
Kafka's errors and ACL answers (cases of Kafka's
DescribeTopicPartitionsRequestHandlerTest)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acl_wire import STANDARD, add_acls, call_as
from cluster_brokers import create_topic
from kio.schema.describe_topic_partitions.v0 import DescribeTopicPartitionsRequest
from kio.schema.describe_topic_partitions.v0.request import Cursor, TopicRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i32
from kgroups.security.authorizer import (
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

from broker_thread import BrokerThread
from raw_wire import call_once

ALICE = "User:alice"
EVERY_TOPIC_OPERATION = 3576
OMITTED = -2147483648
ZERO_ID = None  # kio reads Kafka's zero topic id as None


def request(
    *names: str, limit: int = 2000, cursor: tuple[str, int] | None = None
) -> DescribeTopicPartitionsRequest:
    return DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(name=TopicName(n)) for n in names),
        response_partition_limit=i32(limit),
        cursor=None
        if cursor is None
        else Cursor(topic_name=TopicName(cursor[0]), partition_index=i32(cursor[1])),
    )


def page(response: Any) -> tuple[list[tuple[str, list[int]]], tuple[str, int] | None]:
    """(each topic with its partition indexes, the next cursor)."""
    cursor = response.next_cursor
    return (
        [(t.name, [p.partition_index for p in t.partitions]) for t in response.topics],
        None if cursor is None else (cursor.topic_name, cursor.partition_index),
    )


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path_factory.mktemp("dtp")).start()
    try:
        for name, count in (("c", 1), ("a", 3), ("b", 2)):
            assert create_topic(bt.port, name, count) == ErrorCode.none
        yield bt
    finally:
        bt.stop()


def test_topics_by_name_in_order_with_their_partitions(broker: BrokerThread) -> None:
    response = call_once(broker.port, request("c", "a", "b"))
    assert page(response) == ([("a", [0, 1, 2]), ("b", [0, 1]), ("c", [0])], None)
    topic = response.topics[0]
    assert topic.error_code == ErrorCode.none and topic.is_internal is False
    assert topic.topic_id is not ZERO_ID
    assert topic.topic_authorized_operations == EVERY_TOPIC_OPERATION
    first = topic.partitions[0]
    assert (first.error_code, first.leader_id, first.leader_epoch) == (ErrorCode.none, 0, 0)
    assert first.replica_nodes == first.isr_nodes == (0,)
    assert (first.eligible_leader_replicas, first.last_known_elr) == ((), ())
    assert first.offline_replicas == ()


@pytest.mark.parametrize(
    ("limit", "cursor", "expected"),
    [
        # A topic that does not fit: the cursor names its next partition.
        (2, None, ([("a", [0, 1])], ("a", 2))),
        (2, ("a", 2), ([("a", [2]), ("b", [0])], ("b", 1))),
        (2, ("b", 1), ([("b", [1]), ("c", [0])], None)),
        # A page that ends with a topic: the cursor is the next topic's start.
        (3, None, ([("a", [0, 1, 2])], ("b", 0))),
        (5, ("a", 0), ([("a", [0, 1, 2]), ("b", [0, 1])], ("c", 0))),
        # The limit is at least 1; a cursor past the topic's end lists none of it.
        (0, None, ([("a", [0])], ("a", 1))),
        (10, ("a", 7), ([("a", []), ("b", [0, 1]), ("c", [0])], None)),
    ],
)
def test_pages_follow_the_cursor(
    broker: BrokerThread,
    limit: int,
    cursor: tuple[str, int] | None,
    expected: tuple[list[tuple[str, list[int]]], tuple[str, int] | None],
) -> None:
    assert page(call_once(broker.port, request("a", "b", "c", limit=limit, cursor=cursor))) == (
        expected
    )


def test_every_topic_when_none_is_named(broker: BrokerThread) -> None:
    topics, cursor = page(call_once(broker.port, request(cursor=("b", 1))))
    assert topics[:2] == [("b", [1]), ("c", [0])]
    assert cursor is None


def test_unknown_and_illegal_names(broker: BrokerThread) -> None:
    response = call_once(broker.port, request("a", "missing", "bad/name"))
    errors = {t.name: (t.error_code, t.topic_id, t.partitions) for t in response.topics}
    assert errors["missing"] == (ErrorCode.unknown_topic_or_partition, ZERO_ID, ())
    assert errors["bad/name"] == (ErrorCode.invalid_topic_exception, ZERO_ID, ())
    assert errors["a"][0] == ErrorCode.none


@pytest.mark.parametrize("cursor", [("z", 0), ("a", -1)])
def test_a_cursor_outside_the_topics_asked_is_an_invalid_request(
    broker: BrokerThread, cursor: tuple[str, int]
) -> None:
    response = call_once(broker.port, request("a", "b", cursor=cursor))
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("a", ErrorCode.invalid_request),
        ("b", ErrorCode.invalid_request),
    ]


def test_the_broker_caps_the_limit(tmp_path: Path) -> None:
    bt = BrokerThread(tmp_path, max_request_partition_size_limit=2).start()
    try:
        assert create_topic(bt.port, "a", 3) == ErrorCode.none
        assert page(call_once(bt.port, request("a", limit=100))) == ([("a", [0, 1])], ("a", 2))
    finally:
        bt.stop()


def test_kafka_python_pages_through_a_topic(broker: BrokerThread) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        first = admin.describe_topic_partitions(["a", "b"], response_partition_limit=4)
        rest = admin.describe_topic_partitions(
            ["a", "b"], response_partition_limit=4, cursor=first["next_cursor"]
        )
    finally:
        admin.close()
    assert [len(t["partitions"]) for t in first["topics"]] == [3, 1]
    assert first["next_cursor"] == {"topic_name": "b", "partition_index": 1}
    assert [(t["name"], len(t["partitions"])) for t in rest["topics"]] == [("b", 1)]
    assert rest["next_cursor"] is None


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD, super_users="User:ANONYMOUS")
    bt.start()
    try:
        for name in ("a", "b", "c"):
            assert create_topic(bt.port, name, 2) == ErrorCode.none
        yield bt
    finally:
        bt.stop()


def allow(operation: Operation, topic: str) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, topic, PatternType.LITERAL, ALICE, "*", operation, Permission.ALLOW
    )


def test_topics_without_describe_are_refused_after_the_others(secured: BrokerThread) -> None:
    add_acls(secured, allow(Operation.READ, "c"), allow(Operation.DESCRIBE, "b"))
    response = call_as(secured, ALICE, request("a", "b", "c", "missing", limit=3))
    answered = [(t.name, t.error_code, len(t.partitions)) for t in response.topics]
    assert answered == [
        ("b", ErrorCode.none, 2),
        ("c", ErrorCode.none, 1),  # READ implies DESCRIBE; the page is full
        ("a", ErrorCode.topic_authorization_failed, 0),
        ("missing", ErrorCode.topic_authorization_failed, 0),
    ]
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == ("c", 1)
    ops = {t.name: t.topic_authorized_operations for t in response.topics}
    assert ops["b"] == 1 << Operation.DESCRIBE
    assert ops["c"] == (1 << Operation.READ) | (1 << Operation.DESCRIBE)
    assert ops["a"] == OMITTED


def test_every_topic_leaves_out_those_without_describe(secured: BrokerThread) -> None:
    add_acls(secured, allow(Operation.DESCRIBE, "b"))
    topics, cursor = page(call_as(secured, ALICE, request()))
    assert topics == [("b", [0, 1])] and cursor is None
