"""DescribeProducers on a broker alone: each partition's active producers from
its producer state, Kafka's per-partition errors, and Topic READ as the ACL
(cases of Kafka's KafkaApisTest.testDescribeProducers and
AuthorizerIntegrationTest)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acl_wire import STANDARD, add_acls, call_as
from cluster_brokers import create_topic, produce_batch
from kio.schema.describe_producers.v0 import DescribeProducersRequest
from kio.schema.describe_producers.v0.request import TopicRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i32
from kgroups.records.batch import encode_batch
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


def request(**topics: list[int]) -> DescribeProducersRequest:
    return DescribeProducersRequest(
        topics=tuple(
            TopicRequest(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps))
            for t, ps in topics.items()
        )
    )


def answers(response: Any) -> dict[tuple[str, int], Any]:
    return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}


def idempotent(pid: int, epoch: int, seq: int, count: int, ts: int) -> bytes:
    return encode_batch(
        [(None, b"v", (), ts + i) for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path_factory.mktemp("producers")).start()
    try:
        assert create_topic(bt.port, "t", 2) == ErrorCode.none
        yield bt
    finally:
        bt.stop()


def test_an_idempotent_producer_with_its_last_sequence_and_timestamp(broker: BrokerThread) -> None:
    assert produce_batch(broker.port, "t", 0, idempotent(4242, 3, 0, 3, 1_000))[0] == 0
    assert produce_batch(broker.port, "t", 0, idempotent(4242, 3, 3, 2, 5_000))[0] == 0
    found = answers(call_once(broker.port, request(t=[0, 1])))
    assert found[("t", 0)].error_code == ErrorCode.none
    (state,) = found[("t", 0)].active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (4242, 3, 4)
    assert state.last_timestamp == 5_001
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)
    assert found[("t", 1)].error_code == ErrorCode.none
    assert found[("t", 1)].active_producers == ()


def test_an_open_transaction_shows_where_it_started(broker: BrokerThread) -> None:
    from confluent_kafka import Producer

    assert create_topic(broker.port, "txn", 1) == ErrorCode.none
    assert produce_batch(broker.port, "txn", 0, encode_batch([(None, b"x", (), 1)]))[0] == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "describe"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("txn", b"in a transaction", partition=0)
    assert producer.flush(30) == 0
    (state,) = answers(call_once(broker.port, request(txn=[0])))[("txn", 0)].active_producers
    assert state.current_txn_start_offset == 1  # after the one plain record
    producer.commit_transaction(30)
    (state,) = answers(call_once(broker.port, request(txn=[0])))[("txn", 0)].active_producers
    assert state.current_txn_start_offset == -1
    assert state.coordinator_epoch >= 0  # the marker's


def test_kafka_errors_per_partition(broker: BrokerThread) -> None:
    found = answers(call_once(broker.port, request(t=[5], missing=[0], **{"bad/name": [0]})))
    assert found[("t", 5)].error_code == ErrorCode.unknown_topic_or_partition
    assert found[("missing", 0)].error_code == ErrorCode.unknown_topic_or_partition
    assert found[("bad/name", 0)].error_code == ErrorCode.invalid_topic_exception


def test_kafka_python_admin_describes_the_producers(broker: BrokerThread) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    assert produce_batch(broker.port, "t", 1, idempotent(77, 0, 0, 1, 9_000))[0] == 0
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = admin.describe_producers([TopicPartition("t", 1)])
    finally:
        admin.close()
    (state,) = result[TopicPartition("t", 1)].active_producers
    assert (state.producer_id, state.last_sequence, state.last_timestamp) == (77, 0, 9_000)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    # ANONYMOUS (the plain socket's principal) sets the topic up.
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD, super_users="User:ANONYMOUS")
    bt.start()
    try:
        assert create_topic(bt.port, "t", 1) == ErrorCode.none
        yield bt
    finally:
        bt.stop()


def allow(operation: Operation, topic: str) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, topic, PatternType.LITERAL, ALICE, "*", operation, Permission.ALLOW
    )


def test_topic_read_is_required(secured: BrokerThread) -> None:
    add_acls(secured, allow(Operation.DESCRIBE, "t"))
    found = answers(call_as(secured, ALICE, request(t=[0], other=[0, 1])))
    assert {tp: p.error_code for tp, p in found.items()} == {
        ("t", 0): ErrorCode.topic_authorization_failed,
        ("other", 0): ErrorCode.topic_authorization_failed,
        ("other", 1): ErrorCode.topic_authorization_failed,
    }
    add_acls(secured, allow(Operation.READ, "t"))
    found = answers(call_as(secured, ALICE, request(t=[0])))
    assert found[("t", 0)].error_code == ErrorCode.none
