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
        # Where a Spark Connect server started on this context listens (test_spark_connect).
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", "0")
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
    """A broker whose groups may use short session timeouts (the analytics scenario)
    and whose consumer groups heartbeat fast (short reconciliations)."""
    b = BrokerThread(
        tmp_path_factory.mktemp("spark-broker") / "data",
        group_min_session_timeout_ms=500,
        group_consumer_heartbeat_interval_ms=500,
        group_consumer_min_heartbeat_interval_ms=100,
    ).start()
    try:
        yield b
    finally:
        b.stop()
