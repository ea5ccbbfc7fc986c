"""``kgroups lag-exporter`` serves kafka-lag-exporter's ten metric names with
exactly its labels, so that its Grafana dashboards work unchanged; the member
labels name the consumer that owns each partition."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroups.metrics.lag_exporter import LagExporter

from broker_thread import BrokerThread
from lag_fixtures import commit, create_topic, produce_every_second
from prometheus_text import scrape

PARTITION = {
    "cluster_name",
    "group",
    "topic",
    "partition",
    "member_host",
    "consumer_id",
    "client_id",
}
# kafka-lag-exporter's names and label sets (its Metrics.scala).
KAFKA_LAG_EXPORTER = {
    "kafka_consumergroup_group_offset": PARTITION,
    "kafka_consumergroup_group_lag": PARTITION,
    "kafka_consumergroup_group_lag_seconds": PARTITION,
    "kafka_consumergroup_group_max_lag": {"cluster_name", "group"},
    "kafka_consumergroup_group_max_lag_seconds": {"cluster_name", "group"},
    "kafka_consumergroup_group_sum_lag": {"cluster_name", "group"},
    "kafka_consumergroup_group_topic_sum_lag": {"cluster_name", "group", "topic"},
    "kafka_partition_latest_offset": {"cluster_name", "topic", "partition"},
    "kafka_partition_earliest_offset": {"cluster_name", "topic", "partition"},
    "kafka_consumergroup_poll_time_ms": {"cluster_name"},
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _assigned_consumer(bootstrap: str, group: str, protocol: str) -> Any:
    """A consumer of group ``group`` holding its assignment of ``orders``."""
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": f"{group}-client",
        "group.protocol": protocol,
        "enable.auto.commit": False,
    }
    consumer = Consumer(config)
    consumer.subscribe(["orders"])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 3:
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.1)
    return consumer


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_kafka_lag_exporter_names_and_labels(broker: BrokerThread, protocol: str) -> None:
    b = broker
    create_topic(b, "orders", 3)
    produce_every_second(b.bootstrap, "orders", 5, int(time.time() * 1000))
    group = f"billing-{protocol}"
    consumer = _assigned_consumer(b.bootstrap, group, protocol)
    try:
        commit(b.bootstrap, "idle", "orders", {0: 1})
        exporter = LagExporter(b.bootstrap, interval_s=0.05, cluster_name="prod")
        port = b.run(exporter.start("127.0.0.1", 0))
        try:
            consumer.commit(offsets=_offsets(2), asynchronous=False)
            b.run(exporter.polled())
            b.run(exporter.polled())
            m = scrape(port)
        finally:
            b.run(exporter.close())
    finally:
        consumer.close()

    seen: dict[str, set[str]] = {}
    for name, labels in m.samples:
        if name in KAFKA_LAG_EXPORTER:
            assert {k for k, _ in labels} == KAFKA_LAG_EXPORTER[name], name
            seen.setdefault(name, set()).update(v for k, v in labels if k == "cluster_name")
    assert seen == {name: {"prod"} for name in KAFKA_LAG_EXPORTER}

    owned = {
        (dict(labels)["partition"], dict(labels)["client_id"], dict(labels)["member_host"])
        for name, labels in m.samples
        if name == "kafka_consumergroup_group_lag" and dict(labels)["group"] == group
    }
    assert {(p, client) for p, client, _ in owned} == {
        (str(p), f"{group}-client") for p in range(3)
    }
    assert all("127.0.0.1" in host for _, _, host in owned)
    member_ids = {
        dict(labels)["consumer_id"]
        for name, labels in m.samples
        if name == "kafka_consumergroup_group_offset" and dict(labels)["group"] == group
    }
    assert len(member_ids) == 1 and member_ids != {"unknown"}
    # A group without members: its partitions have no owner.
    idle = {
        "cluster_name": "prod",
        "group": "idle",
        "topic": "orders",
        "partition": 0,
        "member_host": "unknown",
        "consumer_id": "unknown",
        "client_id": "unknown",
    }
    assert m.value("kafka_consumergroup_group_lag", **idle) == 4


def _offsets(offset: int) -> list[Any]:
    from confluent_kafka import TopicPartition

    return [TopicPartition("orders", p, offset) for p in range(3)]
