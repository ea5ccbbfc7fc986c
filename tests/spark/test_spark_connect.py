"""The kgroups source and sink through Spark Connect.

A Spark Connect server is started on the Spark tests' shared context (one JVM
for all of them; its Python workers run this interpreter, which has kgroups),
and the tests talk to it as a remote client does: over gRPC, from a Connect
session that registers the data source itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import committed_offsets, create_topic, produce

from broker_thread import BrokerThread

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def connect_url(spark: Any) -> Iterator[str]:
    """``sc://`` address of a Spark Connect server on the shared context, stopped after."""
    for module in ("grpc", "grpc_status", "google.rpc"):
        pytest.importorskip(module, reason="the Spark Connect client needs pyspark[connect]")
    jvm = spark._jvm
    # Scala objects: py4j reaches them through their MODULE$ field.
    service = getattr(jvm.org.apache.spark.sql.connect.service, "SparkConnectService$")
    service = getattr(service, "MODULE$")
    service.start(spark.sparkContext._jsc.sc())
    try:
        yield f"sc://127.0.0.1:{service.localPort()}"
    finally:
        none = getattr(getattr(jvm.scala, "None$"), "MODULE$")
        service.stop(none, none)


@pytest.fixture
def remote(connect_url: str) -> Iterator[Any]:
    """A new Connect session: its own session on the server, with no data source registered."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    session = RemoteSparkSession.builder.remote(connect_url).create()
    try:
        yield session
    finally:
        session.stop()


def test_batch_read_and_write_through_connect(remote: Any, spark_broker: BrokerThread) -> None:
    from kgroups.spark.source import KafkaDataSource

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "connect-in", 2)
    produce(
        bootstrap, "connect-in", [(f"k{i}".encode(), f"v{i}".encode(), i % 2) for i in range(60)]
    )

    def read(topic: str) -> Any:
        return (
            remote.read.format("kgroups")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
        )

    # Server sessions start without it: the client registers the source over Connect.
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):
        read("connect-in").collect()
    remote.dataSource.register(KafkaDataSource)

    rows = read("connect-in").collect()
    assert sorted((r.partition, r.offset, r.key, r.value) for r in rows) == sorted(
        (i % 2, i // 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(60)
    )

    create_topic(bootstrap, "connect-out", 1)
    (
        remote.createDataFrame([(f"k{i}", f"w{i}") for i in range(20)], "key string, value string")
        .write.format("kgroups")
        .mode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "connect-out")
        .save()
    )
    written = read("connect-out").selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v")
    assert sorted((r.k, r.v) for r in written.collect()) == sorted(
        (f"k{i}", f"w{i}") for i in range(20)
    )


def test_available_now_stream_commits_to_its_group_through_connect(
    remote: Any, spark_broker: BrokerThread, tmp_path: Path
) -> None:
    import kgroups.spark

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "connect-stream", 2)
    produce(bootstrap, "connect-stream", [(None, f"s{i}".encode(), i % 2) for i in range(90)])
    kgroups.spark.register(remote)

    query = (
        remote.readStream.format("kgroups")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "connect-stream")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .option("group.id", "connect-stream-group")
        .load()
        .writeStream.format("memory")
        .queryName("connect_drained")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert [p.numInputRows for p in query.recentProgress if p.numInputRows] == [40, 40, 10]
    rows = remote.table("connect_drained").collect()
    assert sorted(r.value for r in rows) == sorted(f"s{i}".encode() for i in range(90))
    deadline = time.monotonic() + 30
    while committed_offsets(bootstrap, "connect-stream-group", "connect-stream", 2) != {
        0: 45,
        1: 45,
    }:
        assert time.monotonic() < deadline, "the group never reached the stream's end"
        time.sleep(0.2)


def test_bad_stream_option_reaches_the_client_alone(
    remote: Any, spark_broker: BrokerThread
) -> None:
    import kgroups.spark

    kgroups.spark.register(remote)
    query = (
        remote.readStream.format("kgroups")
        .option("kafka.bootstrap.servers", spark_broker.bootstrap)
        .option("subscribe", "connect-stream")
        .option("maxOffsetsPerTrigger", "-3")
        .load()
        .writeStream.format("memory")
        .queryName("connect_never")
        .start()
    )
    try:
        with pytest.raises(Exception) as raised:
            query.awaitTermination(120)
    finally:
        query.stop()
    message = str(raised.value)
    assert "option 'maxOffsetsPerTrigger': '-3' is not a positive integer" in message
    assert "UnboundLocalError" not in message
