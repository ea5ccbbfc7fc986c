"""A confluent-kafka ShareConsumer with fetch.max.bytes=0 gets no records, as
from Kafka 4.2 (librdkafka's own share consumer test expects it): a
ShareFetch of 0 bytes asks for nothing, KIP-74's one batch aside."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC = "jobs"
GROUP = "zero-bytes"


def test_a_share_consumer_with_fetch_max_bytes_0_gets_nothing(tmp_path: Path) -> None:
    from confluent_kafka import Producer, ShareConsumer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    broker = BrokerThread(
        tmp_path, group_share_heartbeat_interval_ms=500, group_share_min_heartbeat_interval_ms=100
    ).start()
    consumers: list[Any] = []
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)
        earliest = ConfigResource(
            ResourceType.GROUP,
            GROUP,
            incremental_configs=[
                ConfigEntry(
                    "share.auto.offset.reset",
                    "earliest",
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        admin.incremental_alter_configs([earliest])[earliest].result(10)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce(TOPIC, value=f"r{i}".encode())
        assert producer.flush(20) == 0

        config = {"bootstrap.servers": broker.bootstrap, "group.id": GROUP}
        starved = ShareConsumer({**config, "fetch.max.bytes": 0})
        consumers.append(starved)
        starved.subscribe([TOPIC])
        got: list[Any] = []
        until = time.monotonic() + 4
        while time.monotonic() < until:
            got += starved.poll(0.2)
        assert got == []
        starved.close()
        consumers.remove(starved)

        # The records were never acquired: an ordinary member gets them all.
        fed = ShareConsumer(config)
        consumers.append(fed)
        fed.subscribe([TOPIC])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 10:
            assert time.monotonic() < deadline, values
            values += [m.value() for m in fed.poll(0.2) if m.error() is None]
        assert sorted(values) == sorted(f"r{i}".encode() for i in range(10))
    finally:
        for consumer in consumers:
            consumer.close()
        broker.stop()
