"""One SparkSession (local[2]) and one broker for all Spark tests.

Starting Spark costs seconds, so the session is shared; the broker runs in this
process (a thread) and Spark's Python workers reach it over loopback.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from broker_thread import BrokerThread


def _java_missing() -> bool:
    return shutil.which("java") is None and not os.environ.get("JAVA_HOME")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if _java_missing():
        pytest.skip("Spark needs Java (17+): no java on PATH and no JAVA_HOME")
    pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")
    del pyspark
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kgroups.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kgroups-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kgroups.spark.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """A broker whose groups may use short session timeouts (the analytics scenario)."""
    b = BrokerThread(
        tmp_path_factory.mktemp("spark-broker") / "data",
        group_min_session_timeout_ms=500,
    ).start()
    try:
        yield b
    finally:
        b.stop()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)


def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes, int]],
    headers: list[tuple[str, bytes]] | None = None,
) -> None:
    """Write (key, value, partition) records with confluent-kafka, waiting for all acks."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, partition in records:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers)
    assert producer.flush(30) == 0
