"""Group administration from confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient against a kgroups broker."""

from __future__ import annotations

import time

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _setup(bootstrap: str) -> None:
    """Topic `t` (3 partitions, 10 records each); group `done` committed 5 on each
    and left; group `live` has one member still running."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("t", 3, 1)])["t"].result(20)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        p.produce("t", value=b"x", partition=i % 3)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "done"})
    c.commit(offsets=[TopicPartition("t", i, 5) for i in range(3)], asynchronous=False)
    c.close()


def _live_member(bootstrap: str) -> object:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "live"})
    c.subscribe(["t"])
    deadline = time.time() + 20
    while not c.assignment() and time.time() < deadline:
        c.poll(0.1)
    assert c.assignment()
    return c


def test_confluent_admin_client(broker: BrokerThread) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    _setup(broker.bootstrap)
    live = _live_member(broker.bootstrap)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    try:
        listed = admin.list_consumer_groups().result(10)
        assert {g.group_id: g.state for g in listed.valid} == {
            "done": ConsumerGroupState.EMPTY,
            "live": ConsumerGroupState.STABLE,
        }
        stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(10)
        assert [g.group_id for g in stable.valid] == ["live"]

        described = admin.describe_consumer_groups(["live", "done"])
        live_desc = described["live"].result(10)
        assert live_desc.state == ConsumerGroupState.STABLE
        assert len(live_desc.members) == 1
        assert sorted(tp.partition for tp in live_desc.members[0].assignment.topic_partitions) == [
            0,
            1,
            2,
        ]
        assert described["done"].result(10).state == ConsumerGroupState.EMPTY

        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("done")])
        got = offsets["done"].result(10)
        assert sorted((tp.partition, tp.offset) for tp in got.topic_partitions) == [
            (0, 5),
            (1, 5),
            (2, 5),
        ]

        altered = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("done", [TopicPartition("t", 1, 8)])]
        )
        altered["done"].result(10)
        got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("done")])
        assert {tp.partition: tp.offset for tp in got["done"].result(10).topic_partitions} == {
            0: 5,
            1: 8,
            2: 5,
        }

        # A group with members cannot be deleted; an empty one can.
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups(["live"])["live"].result(10)
        admin.delete_consumer_groups(["done"])["done"].result(10)
        remaining = admin.list_consumer_groups().result(10)
        assert [g.group_id for g in remaining.valid] == ["live"]
    finally:
        live.close()  # type: ignore[attr-defined]


def test_kafka_python_admin_client(broker: BrokerThread) -> None:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.structs import OffsetAndMetadata

    _setup(broker.bootstrap)
    live = _live_member(broker.bootstrap)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {g["group_id"]: g["group_state"] for g in admin.list_groups()}
        assert listed == {"done": "Empty", "live": "Stable"}
        stable = admin.list_groups(states_filter=["Stable"])
        assert [g["group_id"] for g in stable] == ["live"]
        assert admin.describe_groups(["done"])["done"]["group_state"] == "Empty"

        def offsets() -> dict[int, int]:
            fetched = admin.list_group_offsets({"done": None})["done"]
            return {tp.partition: o.offset for tp, o in fetched.items()}

        assert offsets() == {0: 5, 1: 5, 2: 5}
        admin.alter_group_offsets("done", {TopicPartition("t", 2): OffsetAndMetadata(9, "", -1)})
        assert offsets() == {0: 5, 1: 5, 2: 9}
        deleted = admin.delete_group_offsets("done", [TopicPartition("t", 0)])
        assert deleted[TopicPartition("t", 0)].__name__ == "NoError"
        assert offsets() == {1: 5, 2: 9}
        # The live group still reads `t`: its offsets may not be deleted.
        refused = admin.delete_group_offsets("live", [TopicPartition("t", 0)])
        assert refused[TopicPartition("t", 0)].__name__ == "GroupSubscribedToTopicError"
        admin.delete_groups(["done"])
        assert [g["group_id"] for g in admin.list_groups()] == ["live"]
    finally:
        admin.close()
        live.close()  # type: ignore[attr-defined]
