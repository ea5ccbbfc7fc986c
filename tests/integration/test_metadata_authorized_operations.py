"""Authorized operations as Kafka answers them: Metadata v8-v10's
cluster_authorized_operations gives the Cluster operations the caller may
perform when asked, 0 without DESCRIBE on the Cluster, and the omitted marker
when not asked; without an authorizer Metadata, DescribeCluster and the group
describes answer every operation of the resource."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_wire import STANDARD, add_acls, call_as
from kio.schema.consumer_group_describe.v1 import ConsumerGroupDescribeRequest
from kio.schema.describe_cluster.v1 import DescribeClusterRequest
from kio.schema.describe_groups.v5 import DescribeGroupsRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId
from kgroups.protocol.versions import build
from kgroups.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

from broker_thread import BrokerThread

OMITTED = -2147483648
ALICE = "User:alice"
Op = Operation
# Kafka's bits: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
# ALTER_CONFIGS, IDEMPOTENT_WRITE (codes 5, 7-12) for the Cluster; READ, WRITE,
# CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS for a topic.
EVERY_CLUSTER_OPERATION = 8096
EVERY_TOPIC_OPERATION = 3576
# READ, DELETE, DESCRIBE, and since group configs (Kafka 4.x) DESCRIBE_CONFIGS, ALTER_CONFIGS.
EVERY_GROUP_OPERATION = (
    (1 << Op.READ)
    | (1 << Op.DELETE)
    | (1 << Op.DESCRIBE)
    | (1 << Op.DESCRIBE_CONFIGS)
    | (1 << Op.ALTER_CONFIGS)
)


def cluster_acl(operation: Operation) -> AclBinding:
    return AclBinding(
        ResourceType.CLUSTER,
        CLUSTER_NAME,
        PatternType.LITERAL,
        ALICE,
        "*",
        operation,
        Permission.ALLOW,
    )


def metadata(
    version: int, *, cluster_ops: bool, topic_ops: bool = False, topic: str | None = None
) -> object:
    return build(
        apis.codec(apis.METADATA, version).request_type,
        topics=None if topic is None else (MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=topic is not None,
        include_cluster_authorized_operations=cluster_ops,
        include_topic_authorized_operations=topic_ops,
    )


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD).start()
    try:
        yield bt
    finally:
        bt.stop()


@pytest.fixture
def open_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path).start()
    try:
        yield bt
    finally:
        bt.stop()


# (ACLs alice holds on the Cluster, asked, expected bits)
SECURED_CASES = [
    ((), True, 0),
    ((Op.DESCRIBE,), True, 1 << Op.DESCRIBE),
    ((Op.DESCRIBE, Op.CREATE), True, (1 << Op.DESCRIBE) | (1 << Op.CREATE)),
    # ALTER implies DESCRIBE (and ALTER_CONFIGS implies DESCRIBE_CONFIGS).
    ((Op.ALTER,), True, (1 << Op.ALTER) | (1 << Op.DESCRIBE)),
    ((Op.CREATE,), True, 0),  # no DESCRIBE on the Cluster: 0
    ((Op.DESCRIBE,), False, OMITTED),
]


@pytest.mark.parametrize("version", [8, 9, 10])
@pytest.mark.parametrize(("acls", "asked", "expected"), SECURED_CASES)
def test_metadata_answers_the_callers_cluster_operations_when_asked(
    secured: BrokerThread,
    version: int,
    acls: tuple[Operation, ...],
    asked: bool,
    expected: int,
) -> None:
    add_acls(secured, *(cluster_acl(op) for op in acls))
    response = call_as(secured, ALICE, metadata(version, cluster_ops=asked))
    assert response.cluster_authorized_operations == expected


@pytest.mark.parametrize("version", [8, 9, 10])
@pytest.mark.parametrize(("asked", "expected"), [(True, EVERY_CLUSTER_OPERATION), (False, OMITTED)])
def test_without_an_authorizer_metadata_answers_every_cluster_operation(
    open_broker: BrokerThread, version: int, asked: bool, expected: int
) -> None:
    response = call_as(open_broker, ALICE, metadata(version, cluster_ops=asked))
    assert response.cluster_authorized_operations == expected


@pytest.mark.parametrize("version", [11, 12])
def test_metadata_v11_and_later_have_no_cluster_operations(
    open_broker: BrokerThread, version: int
) -> None:
    response = call_as(open_broker, ALICE, metadata(version, cluster_ops=True))
    assert not hasattr(response, "cluster_authorized_operations")


def test_without_an_authorizer_topics_and_cluster_answer_every_operation(
    open_broker: BrokerThread,
) -> None:
    response = call_as(
        open_broker, ALICE, metadata(10, cluster_ops=True, topic_ops=True, topic="orders")
    )
    assert [(t.name, t.topic_authorized_operations) for t in response.topics] == [
        ("orders", EVERY_TOPIC_OPERATION)
    ]
    assert response.cluster_authorized_operations == EVERY_CLUSTER_OPERATION
    described = call_as(
        open_broker, ALICE, DescribeClusterRequest(include_cluster_authorized_operations=True)
    )
    assert described.cluster_authorized_operations == EVERY_CLUSTER_OPERATION
    described = call_as(
        open_broker, ALICE, DescribeClusterRequest(include_cluster_authorized_operations=False)
    )
    assert described.cluster_authorized_operations == OMITTED


@pytest.mark.parametrize(("asked", "expected"), [(True, EVERY_GROUP_OPERATION), (False, OMITTED)])
def test_without_an_authorizer_a_described_group_answers_every_group_operation(
    open_broker: BrokerThread, asked: bool, expected: int
) -> None:
    described = call_as(
        open_broker,
        ALICE,
        DescribeGroupsRequest(groups=(GroupId("nobody"),), include_authorized_operations=asked),
    )
    assert [(g.error_code, g.authorized_operations) for g in described.groups] == [
        (ErrorCode.none, expected)
    ]
    # A group not found has no operations to answer.
    described = call_as(
        open_broker,
        ALICE,
        ConsumerGroupDescribeRequest(
            group_ids=(GroupId("nobody"),), include_authorized_operations=asked
        ),
    )
    assert [(g.error_code, g.authorized_operations) for g in described.groups] == [
        (ErrorCode.group_id_not_found, OMITTED)
    ]
