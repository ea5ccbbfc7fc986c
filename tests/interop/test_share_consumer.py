"""confluent-kafka ShareConsumers (KIP-932) in one share group: three members
on a two-partition topic share both partitions, and every record is
processed exactly once when all of them acknowledge."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC = "jobs"
GROUP = "workers"
RECORDS = 300


def _set_group_config(admin: Any, name: str, value: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(
        ResourceType.GROUP,
        GROUP,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    admin.incremental_alter_configs([resource])[resource].result(10)


def test_three_share_consumers_process_every_record_once(tmp_path: Path) -> None:
    from confluent_kafka import Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerThread(
        tmp_path, group_share_heartbeat_interval_ms=500, group_share_min_heartbeat_interval_ms=100
    ).start()
    consumers: list[Any] = []
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
        # The records are there before the group first fetches: start from them.
        _set_group_config(admin, "share.auto.offset.reset", "earliest")
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        expected = {f"job-{i}".encode() for i in range(RECORDS)}
        for i, value in enumerate(sorted(expected)):
            producer.produce(TOPIC, value=value, partition=i % 2)
        assert producer.flush(20) == 0

        consumers = [
            ShareConsumer(
                {"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "client.id": f"w{i}"}
            )
            for i in range(3)
        ]
        for consumer in consumers:
            consumer.subscribe([TOPIC])
        processed: dict[str, list[bytes]] = {f"w{i}": [] for i in range(3)}
        deadline = time.monotonic() + 60
        while sum(map(len, processed.values())) < RECORDS:
            assert time.monotonic() < deadline, {k: len(v) for k, v in processed.items()}
            for i, consumer in enumerate(consumers):
                for message in consumer.poll(0.1):
                    assert message.error() is None, message.error()
                    processed[f"w{i}"].append(message.value())
        # Implicit acknowledgement: what a poll returned is accepted by the next.
        for consumer in consumers:
            consumer.poll(0.1)
        values = [v for vs in processed.values() for v in vs]
        assert sorted(values) == sorted(expected)  # each once
    finally:
        for consumer in consumers:
            consumer.close()
        broker.stop()


def test_a_read_committed_share_group_gets_committed_records_only(tmp_path: Path) -> None:
    from confluent_kafka import Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = BrokerThread(tmp_path).start()
    consumer: Any = None
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)
        _set_group_config(admin, "share.auto.offset.reset", "earliest")
        _set_group_config(admin, "share.isolation.level", "read_committed")
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx"})
        producer.init_transactions(20)
        for outcome, values in (
            ("commit", [b"c1", b"c2"]),
            ("abort", [b"a1"]),
            ("commit", [b"c3"]),
        ):
            producer.begin_transaction()
            for value in values:
                producer.produce(TOPIC, value=value, partition=0)
            if outcome == "commit":
                producer.commit_transaction(20)
            else:
                producer.abort_transaction(20)

        consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        consumer.subscribe([TOPIC])
        processed: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(processed) < 3:
            assert time.monotonic() < deadline, processed
            processed += [m.value() for m in consumer.poll(0.2) if m.error() is None]
        # A little longer: nothing else comes.
        for _ in range(5):
            processed += [m.value() for m in consumer.poll(0.2) if m.error() is None]
        assert processed == [b"c1", b"c2", b"c3"]
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
