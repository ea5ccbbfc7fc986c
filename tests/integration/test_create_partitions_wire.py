"""CreatePartitions on a broker alone, v0-v3, with the answers Kafka's
controller gives (ReplicationControlManagerTest.testCreatePartitions and
testValidateBadManualPartitionAssignments, ControllerApis' duplicates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_brokers import fetch, metadata, produce
from partition_admin_wire import create_partitions
from topic_admin_wire import create

from kgroups.errors import ErrorCode
from kgroups.topics.names import MAX_PARTITIONS_PER_TOPIC

from broker_thread import BrokerThread

NONE = ErrorCode.none
INVALID_PARTITIONS = ErrorCode.invalid_partitions
BAD_ASSIGNMENT = ErrorCode.invalid_replica_assignment


def _counts(port: int, *names: str) -> dict[str, int]:
    return {t.name: len(t.partitions) for t in metadata(port, *names).topics}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_adds_partitions_that_serve_at_once(
    broker: BrokerThread, version: int
) -> None:
    assert create(broker.port, "orders", 2).error_code == NONE
    assert create_partitions(broker.port, {"orders": 5}, version=version) == [
        ("orders", NONE, None)
    ]
    assert _counts(broker.port, "orders") == {"orders": 5}
    assert produce(broker.port, "orders", 4, b"new") == (NONE, 0)
    assert fetch(broker.port, "orders", 4, 0) == (NONE, [b"new"])


def test_kafka_controller_answers(broker: BrokerThread) -> None:
    for name, count in (("foo", 3), ("bar", 4), ("quux", 2), ("foo2", 2)):
        assert create(broker.port, name, count).error_code == NONE
    answers = create_partitions(broker.port, [("foo", 5), ("bar", 3), ("baz", 3), ("quux", 2)])
    assert answers == [
        ("foo", NONE, None),
        (
            "bar",
            INVALID_PARTITIONS,
            "The topic bar currently has 4 partition(s); 3 would not be an increase.",
        ),
        ("baz", ErrorCode.unknown_topic_or_partition, None),
        ("quux", INVALID_PARTITIONS, "Topic already has 2 partition(s)."),
    ]
    me = broker.config.broker_id
    answers = create_partitions(
        broker.port,
        {"foo": 6, "quux": 4, "foo2": 3, "bar": 5},
        assignments={"foo": [[me]], "quux": [[me]], "foo2": [[me + 1]], "bar": [[me, me]]},
    )
    assert answers == [
        ("foo", NONE, None),
        (
            "quux",
            BAD_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ),
        (
            "foo2",
            BAD_ASSIGNMENT,
            f"The manual partition assignment includes broker {me + 1}, but no such broker "
            "is registered.",
        ),
        (
            "bar",
            BAD_ASSIGNMENT,
            f"The manual partition assignment includes the broker {me} more than once.",
        ),
    ]
    empty = create_partitions(broker.port, {"bar": 5}, assignments={"bar": [[]]})
    assert empty == [
        ("bar", BAD_ASSIGNMENT, "The manual partition assignment includes an empty replica list.")
    ]
    assert _counts(broker.port, "foo", "bar", "quux", "foo2") == {
        "foo": 6,
        "bar": 4,
        "quux": 2,
        "foo2": 2,
    }


def test_duplicates_validate_only_limits_and_internal_topics(broker: BrokerThread) -> None:
    assert create(broker.port, "orders", 1).error_code == NONE
    assert create_partitions(broker.port, [("orders", 2), ("orders", 3)]) == [
        ("orders", ErrorCode.invalid_request, "Duplicate topic name.")
    ]
    assert create_partitions(broker.port, {"orders": 4}, validate_only=True) == [
        ("orders", NONE, None)
    ]
    too_many = create_partitions(broker.port, {"orders": MAX_PARTITIONS_PER_TOPIC + 1})
    assert too_many[0][1] == INVALID_PARTITIONS
    assert _counts(broker.port, "orders") == {"orders": 1}
    # The coordinator places groups by the offsets topic's partition count.
    assert create(broker.port, "__consumer_offsets", 1).error_code != NONE  # made by the broker
    broker.call(lambda: broker.broker.coordinator.ensure_offsets_topic())  # type: ignore[union-attr]
    (refused,) = create_partitions(broker.port, {"__consumer_offsets": 100})
    assert refused[1] == ErrorCode.invalid_request


def test_added_partitions_survive_a_restart(tmp_path: Path) -> None:
    first = BrokerThread(tmp_path).start()
    try:
        assert create(first.port, "orders", 1).error_code == NONE
        assert create_partitions(first.port, {"orders": 3})[0][1] == NONE
        assert produce(first.port, "orders", 2, b"kept") == (NONE, 0)
    finally:
        first.stop()
    again = BrokerThread(tmp_path).start()
    try:
        assert _counts(again.port, "orders") == {"orders": 3}
        assert fetch(again.port, "orders", 2, 0) == (NONE, [b"kept"])
    finally:
        again.stop()
