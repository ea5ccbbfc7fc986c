"""kgroups' ShareConsumer and confluent-kafka's ShareConsumer in one share
group: both are members, each is assigned one of the two partitions, and
between them every record is processed once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kgroups.client.share_consumer import ShareConsumer as KgroupsShareConsumer

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop

TOPIC = "jobs"
GROUP = "mixed"
RECORDS = 200


def test_kgroups_and_confluent_share_consumers_share_a_group(tmp_path: Path) -> None:
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
        tmp_path, group_share_heartbeat_interval_ms=300, group_share_min_heartbeat_interval_ms=100
    ).start()
    theirs: Any = None
    ours: KgroupsShareConsumer | None = None
    try:
        admin: Any = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(10)
        resource = ConfigResource(
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
        admin.incremental_alter_configs([resource])[resource].result(10)
        theirs = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        theirs.subscribe([TOPIC])
        ours = KgroupsShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        ours.subscribe([TOPIC])
        processed: dict[str, list[bytes]] = {"theirs": [], "ours": []}
        # Two members, two partitions: one each, once both are in.
        deadline = time.monotonic() + 30
        while len(ours.assignment()) != 1:
            assert time.monotonic() < deadline, ours.assignment()
            assert len(theirs.poll(0.1)) == 0 and ours.poll(0.1) == []
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        expected = {f"job-{i}".encode() for i in range(RECORDS)}
        for i, value in enumerate(sorted(expected)):
            producer.produce(TOPIC, value=value, partition=i % 2)
        assert producer.flush(20) == 0

        deadline = time.monotonic() + 60
        while sum(map(len, processed.values())) < RECORDS:
            assert time.monotonic() < deadline, {k: len(v) for k, v in processed.items()}
            for message in theirs.poll(0.1):
                assert message.error() is None, message.error()
                processed["theirs"].append(message.value())
            processed["ours"] += [r.value or b"" for r in ours.poll(0.1)]
        for _ in range(3):  # accept the last polls' records; nothing else comes
            processed["theirs"] += [m.value() for m in theirs.poll(0.1) if m.error() is None]
            processed["ours"] += [r.value or b"" for r in ours.poll(0.1)]
        values = [v for vs in processed.values() for v in vs]
        assert sorted(values) == sorted(expected)  # each once
        # Still two members, a partition each. (How the records split between
        # them depends on when the confluent member heard of its share of the
        # assignment: until then it may fetch from both partitions.)
        assert len(ours.assignment()) == 1
    finally:
        if theirs is not None:
            theirs.close()
        if ours is not None:
            ours.close()
        broker.stop()
