"""Share consumers for the tests: a thread broker with quick share-group
heartbeats (and a short record lock when asked), a topic the group reads
from its start, and kgroups' ShareConsumer polled until it has records."""

from __future__ import annotations

import time
from pathlib import Path

from cluster_brokers import create_topic
from config_admin_wire import SET, incremental

from kgroups.client.share_consumer import ShareConsumer
from kgroups.client.share_record import ShareConsumerRecord
from kgroups.errors import ErrorCode

from broker_thread import BrokerThread

TOPIC = "jobs"
GROUP = "workers"
_GROUP_RESOURCE = 32


def share_broker(tmp_path: Path, lock_ms: int | None = None) -> BrokerThread:
    """``lock_ms`` shortens the record lock (Kafka's 30 s by default)."""
    lock: dict[str, object] = {}
    if lock_ms is not None:
        lock = {
            "group_share_record_lock_duration_ms": lock_ms,
            "group_share_min_record_lock_duration_ms": min(lock_ms, 15000),
        }
    return BrokerThread(
        tmp_path / "data",
        group_share_heartbeat_interval_ms=200,
        group_share_min_heartbeat_interval_ms=100,
        **lock,
    ).start()


def share_topic(broker: BrokerThread, partitions: int) -> None:
    assert create_topic(broker.port, TOPIC, partitions) is ErrorCode.none
    # The records come before the group's first fetch: start from them.
    reset = [("share.auto.offset.reset", SET, "earliest")]
    assert incremental(broker.port, [(_GROUP_RESOURCE, GROUP, reset)])[0][1] is ErrorCode.none


def share_consumer(broker: BrokerThread, **extra: object) -> ShareConsumer:
    config: dict[str, object] = {"bootstrap.servers": broker.bootstrap, "group.id": GROUP}
    config.update({k.replace("_", "."): v for k, v in extra.items()})
    consumer = ShareConsumer(config)
    consumer.subscribe([TOPIC])
    return consumer


def poll_until(
    consumer: ShareConsumer, count: int, timeout: float = 20
) -> list[ShareConsumerRecord]:
    got: list[ShareConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, got
        got += consumer.poll(0.2)
    return got
