"""The Spark session of ``kgroups analytics``, sized to the offsets log it reads.

Spark's defaults suit big data: 200 shuffle partitions turn every shuffle of a
few hundred records into 200 empty tasks, and the console progress bars drown
the job's own step lines. So the session runs with adaptive query execution,
without the web UI and progress bars, Spark logging errors only (log4j2.properties
beside this file; ``--spark-ui`` brings all three back), and once
the log's size is known the job sets one shuffle partition per
``RECORDS_PER_SHUFFLE_PARTITION`` records -- unless ``spark.sql.shuffle.partitions``
was given (``--conf``, ``spark-defaults.conf``), which then wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "RECORDS_PER_SHUFFLE_PARTITION",
    "analytics_session",
    "shuffle_partitions_for",
    "size_shuffles",
]

RECORDS_PER_SHUFFLE_PARTITION = 500_000
_MAX_SHUFFLE_PARTITIONS = 200  # Spark's default, as a ceiling
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_LOG4J2 = Path(__file__).with_name("log4j2.properties")


def analytics_session(master: str | None, spark_ui: bool = False) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName("kgroups analytics")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
        .config("spark.ui.enabled", str(spark_ui).lower())
        .config("spark.ui.showConsoleProgress", str(spark_ui).lower())
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master:
        builder = builder.master(master)
    if not spark_ui:  # taken when this process starts the JVM, ignored under spark-submit
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_LOG4J2}"
        )
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
    return int(spark.conf.get(_SHUFFLE_PARTITIONS) or 200)
