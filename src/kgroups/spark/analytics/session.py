"""The Spark session of ``kgroups analytics``, sized to the offsets log it reads.

Spark's defaults suit big data: 200 shuffle partitions turn every shuffle of a
few hundred records into 200 empty tasks, and the console progress bars drown
the job's own step lines. So the session runs with adaptive query execution,
without the web UI and progress bars, Spark logging errors only (log4j2.properties
beside this file; ``--spark-ui`` brings all three back). The log's size, asked
of the cluster before the JVM starts and counted by the job's first step, sizes
the rest: one shuffle partition per ``RECORDS_PER_SHUFFLE_PARTITION`` records,
and below ``SMALL_LOG_RECORDS`` the quick JIT only, the serial GC and no
whole-stage code generation, as compiling costs a short run more than it saves.
Whatever the size, the driver JVM maps the class-data archive of an earlier run
(class_archive.py) and Python workers fork from a daemon that has imported
kgroups' client once (kgroups.spark.worker_daemon). A setting given with
``--conf`` or in ``spark-defaults.conf`` wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kgroups.spark.analytics.class_archive import archive_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "RECORDS_PER_SHUFFLE_PARTITION",
    "analytics_session",
    "log_records",
    "shuffle_partitions_for",
    "size_shuffles",
]

RECORDS_PER_SHUFFLE_PARTITION = 500_000
SMALL_LOG_RECORDS = 1_000_000
_MAX_SHUFFLE_PARTITIONS = 200  # Spark's default, as a ceiling
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_CODEGEN = "spark.sql.codegen.wholeStage"
_LOG4J2 = Path(__file__).with_name("log4j2.properties")


def log_records(
    bootstrap: str, topic: str, security_keys: dict[str, str] | None = None
) -> int | None:
    """How many records the offsets topic holds now (None when the cluster cannot
    say; the job then reports why)."""
    from kgroups.spark.cluster_calls import ClusterCalls
    from kgroups.spark.offset_spec import EARLIEST, LATEST
    from kgroups.spark.options import TopicSelection

    try:
        with ClusterCalls(bootstrap, security_keys=security_keys) as calls:
            partitions = calls.partitions(TopicSelection(topics=(topic,)))
            latest = calls.offsets({tp: LATEST for tp in partitions})
            earliest = calls.offsets({tp: EARLIEST for tp in partitions})
    except Exception:
        return None
    return sum(end - earliest.get(tp, 0) for tp, end in latest.items())


def analytics_session(
    master: str | None, spark_ui: bool = False, records: int | None = None
) -> SparkSession:
    """The session, for a log of about ``records`` records when known: a small log
    gets a JVM that compiles with the quick JIT (C1) only, which cuts the CPU a short
    run spends compiling, and the serial GC; a big one keeps the optimising JIT and G1."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName("kgroups analytics")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
        .config("spark.ui.enabled", str(spark_ui).lower())
        .config("spark.ui.showConsoleProgress", str(spark_ui).lower())
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.daemon.module", "kgroups.spark.worker_daemon")
    )
    if master:
        builder = builder.master(master)
    # Taken when this process starts the JVM, ignored under spark-submit.
    java_options = [] if spark_ui else [f"-Dlog4j2.configurationFile={_LOG4J2}"]
    java_options += archive_options()
    if records is not None and records < SMALL_LOG_RECORDS:
        # One GC thread and no heap regions to set up: a small heap needs neither.
        java_options += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
    spark = builder.getOrCreate()
    if not spark_ui:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def shuffle_partitions_for(records: int) -> int:
    return max(1, min(_MAX_SHUFFLE_PARTITIONS, -(-records // RECORDS_PER_SHUFFLE_PARTITION)))


def size_shuffles(spark: SparkSession, records: int) -> int:
    """Size the shuffles for a log of ``records`` records, unless the partition
    count was configured; returns the count in force."""
    if not spark.sparkContext.getConf().contains(_SHUFFLE_PARTITIONS):
        spark.conf.set(_SHUFFLE_PARTITIONS, str(shuffle_partitions_for(records)))
    if records < SMALL_LOG_RECORDS and not spark.sparkContext.getConf().contains(_CODEGEN):
        spark.conf.set(_CODEGEN, "false")  # compiling each query costs more than it saves
    return int(spark.conf.get(_SHUFFLE_PARTITIONS) or 200)
