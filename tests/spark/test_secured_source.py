"""The data source and sink against a SASL_SSL (SCRAM-SHA-512) listener, with
the client's security keys given as ``kafka.*`` options: what the sink writes
(plainly and in transactions) a batch and a stream read back; a wrong password fails the
query at once with the broker's refusal."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sasl_fixtures import PASSWORDS, sasl_broker

from kgroups.testing.thread_broker import ThreadBroker

from certificates import Authority

pytestmark = pytest.mark.spark

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _jaas(password: str) -> str:
    return f'{SCRAM} required username="bob" password="{password}";'


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The broker's kafka.* options: bootstrap and SASL_SSL security keys."""
    directory = tmp_path_factory.mktemp("secured-spark")
    ca = Authority(directory / "ca")
    server = ca.server()
    broker: ThreadBroker = sasl_broker(
        directory / "data",
        **{
            "listeners": "SASL_SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.both),
            "ssl.truststore.type": "PEM",
        },
    ).start()
    assert broker.broker is not None
    try:
        yield {
            "kafka.bootstrap.servers": f"127.0.0.1:{broker.broker.listener_port('SASL_SSL')}",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": _jaas(PASSWORDS["bob"]),
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": str(ca.cert),
        }
    finally:
        broker.stop()


def _create_topic(options: dict[str, str], name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(
        {
            "bootstrap.servers": options["kafka.bootstrap.servers"],
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "bob",
            "sasl.password": PASSWORDS["bob"],
            "ssl.ca.location": options["kafka.ssl.truststore.location"],
        }
    )
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


def _write(spark: Any, options: dict[str, str], values: list[bytes], **extra: str) -> None:
    rows = [(v, i % 2) for i, v in enumerate(values)]
    writer = (
        spark.createDataFrame(rows, "value binary, partition int")
        .repartition(2)
        .write.format("kgroups")
        .mode("append")
        .option("topic", "secured")
    )
    for key, value in {**options, **extra}.items():
        writer = writer.option(key, value)
    writer.save()


def test_the_source_reads_what_the_sink_wrote_over_sasl_ssl(
    spark: Any, secured: dict[str, str]
) -> None:
    _create_topic(secured, "secured", 2)
    plain = [f"p{i}".encode() for i in range(20)]
    in_transactions = [f"t{i}".encode() for i in range(20)]
    _write(spark, secured, plain)
    _write(spark, secured, in_transactions, **{"kgroups.transactional": "true"})

    reader = spark.read.format("kgroups").option("subscribe", "secured")
    for key, value in {**secured, "kafka.isolation.level": "read_committed"}.items():
        reader = reader.option(key, value)
    got = [bytes(r.value) for r in reader.load().collect()]
    assert sorted(got) == sorted(plain + in_transactions)

    # A stream's planning runs in a process of its own, from a pickled reader.
    stream = spark.readStream.format("kgroups").option("subscribe", "secured")
    for key, value in {**secured, "startingOffsets": "earliest"}.items():
        stream = stream.option(key, value)
    query = (
        stream.load()
        .writeStream.format("memory")
        .queryName("secured_stream")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(60)
    assert spark.table("secured_stream").filter("value LIKE 'p%'").count() == len(plain)


def test_a_wrong_password_fails_the_query_naming_authentication(
    spark: Any, secured: dict[str, str]
) -> None:
    wrong = {**secured, "kafka.sasl.jaas.config": _jaas("not-bobs")}
    reader = spark.read.format("kgroups").option("subscribe", "secured")
    for key, value in wrong.items():
        reader = reader.option(key, value)
    started = time.monotonic()
    with pytest.raises(Exception, match="AuthenticationFailedError") as refused:
        reader.load().collect()
    assert "invalid credentials" in str(refused.value)
    with pytest.raises(Exception, match="AuthenticationFailedError"):
        _write(spark, wrong, [b"never"])
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("driver_read_records", [0, 100_000], ids=["executors", "driver"])
def test_analytics_reads_a_secured_cluster_with_its_security_keys(
    spark: Any, secured: dict[str, str], tmp_path: Path, driver_read_records: int
) -> None:
    from kgroups.client.producer import Producer
    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics
    from kgroups.spark.cluster_calls import ClusterCalls

    client = {key.removeprefix("kafka."): value for key, value in secured.items()}
    bootstrap = client.pop("bootstrap.servers")
    topic, group = f"secured-lag-{driver_read_records}", f"secured-reader-{driver_read_records}"
    with Producer({"bootstrap.servers": bootstrap, **client}) as producer:
        for i in range(5):
            producer.send(topic, f"r{i}".encode(), partition=0).result(30)
    with ClusterCalls(bootstrap, security_keys=client) as calls:
        calls.commit(group, {(topic, 0): 3})

    out = str(tmp_path / "report")
    run_analytics(
        spark,
        AnalyticsConfig(
            bootstrap=bootstrap,
            output=out,
            groups=group,
            security_keys=client,
            driver_read_records=driver_read_records,
        ),
        Progress(steps=8, write=lambda line: None),
    )
    lag = spark.read.parquet(f"{out}/lag").collect()
    assert [(r.committed_offset, r.log_end, r.lag_offsets) for r in lag] == [(3, 5, 2)]
