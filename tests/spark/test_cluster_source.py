"""The kgroups data source reading a topic whose partitions are led by three
brokers of a cluster, from a bootstrap naming one of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import leaders, running_cluster, wait_for
from spark_helpers import create_topic, produce

from kgroups.postgres_store.local_server import LocalPostgres

from postgres import fresh_database
from process_broker import BrokerProcess

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def brokers(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: LocalPostgres
) -> Iterator[list[BrokerProcess]]:
    """Three brokers for the module: each test uses topics and groups of its own."""
    data = tmp_path_factory.mktemp("cluster")
    with running_cluster(data, fresh_database(postgres_server), 3) as started:
        yield started


def test_a_batch_read_through_one_broker_reads_the_partitions_of_all_three(
    spark: Any, brokers: list[BrokerProcess]
) -> None:
    bootstrap = brokers[0].bootstrap
    create_topic(bootstrap, "spread", 3)
    wait_for(lambda: set(leaders(brokers[0].port, "spread").values()) == {1, 2, 3})
    records = [(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(300)]
    produce(bootstrap, "spread", records)
    rows = (
        spark.read.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "spread")
        .load()
        .collect()
    )
    got = {(r.partition, r.offset): (r.key, r.value) for r in rows}
    assert got == {(p, i // 3): (k, v) for i, (k, v, p) in enumerate(records)}


def test_analytics_reads_the_offsets_log_of_a_cluster(
    spark: Any, tmp_path: Path, brokers: list[BrokerProcess]
) -> None:
    """`__consumer_offsets` lives in the store, its partitions led by the three
    brokers: the analytics job reads it through one broker and finds the
    group's lag."""
    from confluent_kafka import Consumer

    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    bootstrap = brokers[0].bootstrap
    create_topic(bootstrap, "orders", 3)
    wait_for(lambda: set(leaders(brokers[0].port, "orders").values()) == {1, 2, 3})
    produce(bootstrap, "orders", [(None, b"x", i % 3) for i in range(90)])
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["orders"])
    read = 0
    for _ in range(200):
        messages = consumer.consume(100, 0.1)
        read += len(messages)
        if read >= 60:
            break
    consumer.commit(asynchronous=False)
    assigned = consumer.assignment()
    committed = {tp.partition: tp.offset for tp in consumer.committed(assigned, 10)}
    consumer.close()

    out = str(tmp_path / "report")
    run_analytics(
        spark,
        AnalyticsConfig(bootstrap=bootstrap, output=out, groups="reader"),
        Progress(steps=8, write=lambda line: None),
    )
    lag = spark.read.parquet(f"{out}/lag").collect()
    assert len(committed) == 3 and sum(committed.values()) >= 60
    assert {r.log_end for r in lag} == {30}
    newest = {p: max(r.committed_offset for r in lag if r.partition == p) for p in committed}
    assert newest == committed
    assert all(r.lag_offsets == 30 - r.committed_offset for r in lag)
