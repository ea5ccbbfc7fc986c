"""confluent-kafka ShareConsumers (KIP-932) when deliveries fail: the records
of a member killed with SIGKILL go to another member, delivered a second
time; a record released on every delivery is archived at
`group.share.delivery.count.limit` and never delivered again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC = "jobs"
GROUP = "workers"

# A member that takes the records and dies before acknowledging them.
_DOOMED_MEMBER = """
import sys, time
from confluent_kafka import ShareConsumer
consumer = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]})
consumer.subscribe([sys.argv[3]])
got = []
deadline = time.monotonic() + 60
while len(got) < 3 and time.monotonic() < deadline:
    got += [m for m in consumer.poll(0.2) if m.error() is None]
print("got", len(got), flush=True)
time.sleep(600)
"""


def _setup(broker: BrokerThread, values: list[bytes]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)
    reset = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=[reset])
    admin.incremental_alter_configs([resource])[resource].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    assert producer.flush(20) == 0


def _broker(tmp_path: Path) -> BrokerThread:
    return BrokerThread(
        tmp_path,
        group_share_heartbeat_interval_ms=500,
        group_share_min_heartbeat_interval_ms=100,
        group_share_delivery_count_limit=2,
    ).start()


def test_a_killed_members_records_go_to_another_delivered_again(tmp_path: Path) -> None:
    from confluent_kafka import ShareConsumer

    broker = _broker(tmp_path)
    member = None
    other: Any = None
    try:
        _setup(broker, [b"a", b"b", b"c"])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        member = subprocess.Popen(
            [sys.executable, "-c", _DOOMED_MEMBER, broker.bootstrap, GROUP, TOPIC],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert member.stdout is not None
        assert member.stdout.readline().strip() == "got 3"
        member.send_signal(signal.SIGKILL)
        member.wait(10)

        other = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        other.subscribe([TOPIC])
        again: list[Any] = []
        deadline = time.monotonic() + 60
        while len(again) < 3:
            assert time.monotonic() < deadline, [m.value() for m in again]
            again += [m for m in other.poll(0.2) if m.error() is None]
        assert sorted((m.value(), m.delivery_count()) for m in again) == [
            (b"a", 2),
            (b"b", 2),
            (b"c", 2),
        ]
    finally:
        if member is not None and member.poll() is None:
            member.kill()
            member.wait(10)
        if other is not None:
            other.close()
        broker.stop()


def test_a_record_released_at_every_delivery_is_archived_at_the_limit(tmp_path: Path) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    broker = _broker(tmp_path)
    consumer: Any = None
    try:
        _setup(broker, [b"poison", b"fine"])
        consumer = ShareConsumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": GROUP,
                "share.acknowledgement.mode": "explicit",
            }
        )
        consumer.subscribe([TOPIC])
        deliveries: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 60
        while (b"poison", 2) not in deliveries:
            assert time.monotonic() < deadline, deliveries
            for message in consumer.poll(0.2):
                if message.error() is not None:
                    continue
                deliveries.append((message.value(), message.delivery_count()))
                kind = AcknowledgeType.RELEASE if message.value() == b"poison" else None
                consumer.acknowledge(message, kind or AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        # The limit (2) reached and released again: archived, never offered again.
        quiet_until = time.monotonic() + 3
        while time.monotonic() < quiet_until:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    deliveries.append((message.value(), message.delivery_count()))
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        assert sorted(deliveries) == [(b"fine", 1), (b"poison", 1), (b"poison", 2)]
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
