"""DescribeLogDirs on a broker alone: its one log directory, each partition's
segment bytes, offset lag 0, never a future log, and (v4) its volume's total
and usable bytes; Cluster DESCRIBE is required (Kafka's DescribeLogDirsRequestTest
and AuthorizerIntegrationTest)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acl_wire import STANDARD, add_acls, call_as
from cluster_brokers import create_topic, produce
from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i32
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
from raw_wire import call_once

ALICE = "User:alice"


def request(version: int, topics: dict[str, list[int]] | None = None) -> Any:
    return build(
        apis.codec(apis.DESCRIBE_LOG_DIRS, version).request_type,
        topics=None
        if topics is None
        else tuple(
            DescribableLogDirTopic(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
            for t, ps in topics.items()
        ),
    )


def sizes(result: Any) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions
    }


def segment_bytes(log_dir: Path, topic: str, partition: int) -> int:
    return sum(f.stat().st_size for f in (log_dir / f"{topic}-{partition}").glob("*.log"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path_factory.mktemp("logs")).start()
    try:
        assert create_topic(bt.port, "sized", 2) == ErrorCode.none
        assert create_topic(bt.port, "other", 1) == ErrorCode.none
        assert produce(bt.port, "sized", 0, b"a" * 100, b"b" * 100)[0] == ErrorCode.none
        assert produce(bt.port, "sized", 0, b"c" * 10)[0] == ErrorCode.none
        yield bt
    finally:
        bt.stop()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_every_partition_with_its_segment_bytes(broker: BrokerThread, version: int) -> None:
    response = call_once(broker.port, request(version))
    (result,) = response.results
    assert result.error_code == ErrorCode.none
    assert result.log_dir == str(broker.log_dir.absolute())
    found = sizes(result)
    assert found[("sized", 0)] == segment_bytes(broker.log_dir, "sized", 0) > 210
    assert found[("sized", 1)] == 0
    assert found[("other", 0)] == 0
    assert all(
        p.offset_lag == 0 and p.is_future_key is False for t in result.topics for p in t.partitions
    )
    if version >= 3:
        assert response.error_code == ErrorCode.none


def test_v4_gives_the_volume_of_the_log_directory(broker: BrokerThread) -> None:
    (result,) = call_once(broker.port, request(4)).results
    usage = shutil.disk_usage(broker.log_dir)
    assert result.total_bytes == usage.total
    assert 0 < result.usable_bytes <= result.total_bytes


def test_only_the_partitions_asked_for(broker: BrokerThread) -> None:
    asked = {"sized": [1, 7], "other": [3], "missing": [0]}
    (result,) = call_once(broker.port, request(4, asked)).results
    # Unknown partitions and topics are left out, and so is a topic with none of its own.
    assert sizes(result) == {("sized", 1): 0}


def test_an_empty_list_asks_for_no_partition(broker: BrokerThread) -> None:
    (result,) = call_once(broker.port, request(4, {})).results
    assert result.error_code == ErrorCode.none and result.topics == ()


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD).start()
    try:
        yield bt
    finally:
        bt.stop()


def allow(operation: Operation) -> AclBinding:
    return AclBinding(
        ResourceType.CLUSTER,
        CLUSTER_NAME,
        PatternType.LITERAL,
        ALICE,
        "*",
        operation,
        Permission.ALLOW,
    )


def test_cluster_describe_is_required(secured: BrokerThread) -> None:
    refused = call_as(secured, ALICE, request(4))
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert refused.results == ()
    # Before v3 the response has no error code: no log directory at all.
    assert call_as(secured, ALICE, request(2)).results == ()
    add_acls(secured, allow(Operation.ALTER))  # ALTER implies DESCRIBE
    (result,) = call_as(secured, ALICE, request(4)).results
    assert result.error_code == ErrorCode.none
    assert result.log_dir == str(secured.log_dir.absolute())


def test_kafka_python_admin_describes_the_log_dirs(broker: BrokerThread) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        ((answer),) = admin.describe_log_dirs({"sized": [0]})
    finally:
        admin.close()
    (log_dir,) = answer["log_dirs"]
    assert log_dir["log_dir"] == str(broker.log_dir.absolute())
    (topic,) = log_dir["topics"]
    (partition,) = topic["partitions"]
    assert (topic["name"], partition["partition_index"]) == ("sized", 0)
    assert partition["partition_size"] == segment_bytes(broker.log_dir, "sized", 0)
