"""Lag over time, from commits and the data topics' offset -> timestamp index.

The log end offset of a partition at time t is one past the last record whose
timestamp is at most t. Rather than a range join, the records and the moments
to look up (commits, evaluation ticks) are sorted together per partition and a
running maximum of the record offsets gives each moment its log end offset.

A commit's lag in offsets is that log end minus the committed offset; its lag
in seconds is the commit time minus the timestamp of the first record it has
not consumed (the record at the committed offset), and zero when caught up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from kgroups.spark import register
from kgroups.spark.driver_read import read_here
from kgroups.spark.schema import kafka_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["commit_lag", "log_end_as_of", "record_index", "ticks"]


def record_index(
    spark: SparkSession,
    bootstrap: str,
    topics: list[str],
    kafka_options: dict[str, str] | None = None,
    driver_records: int = 0,
) -> DataFrame:
    """(topic, partition, offset, ts_ms) of every record of ``topics``; an index of
    at most ``driver_records`` records is read here, on the driver."""
    if not topics:
        return spark.createDataFrame([], "topic string, partition int, offset long, ts_ms long")
    options = {
        **(kafka_options or {}),
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": ",".join(sorted(topics)),
        "indexOnly": "true",
        "failOnDataLoss": "false",
    }
    small = read_here(options, driver_records) if driver_records else None
    if small is not None:
        rows = spark.createDataFrame(small, kafka_schema(include_headers=False))
    else:
        register(spark)
        rows = spark.read.format("kgroups").options(**options).load()
    return rows.select(
        "topic", "partition", "offset", F.unix_millis(F.col("timestamp")).alias("ts_ms")
    )


def log_end_as_of(index: DataFrame, moments: DataFrame) -> DataFrame:
    """``moments`` (topic, partition, t_ms, ...) with ``log_end`` as of each t_ms
    (null when no record of the partition is that old)."""
    records = index.select(
        "topic",
        "partition",
        F.col("ts_ms").alias("t_ms"),
        F.lit(0).alias("_kind"),
        F.col("offset").alias("_record"),
    )
    probes = moments.withColumn("_kind", F.lit(1))
    both = records.unionByName(probes, allowMissingColumns=True)
    upto = (
        Window.partitionBy("topic", "partition")
        .orderBy("t_ms", "_kind")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        both.withColumn("log_end", F.max("_record").over(upto) + 1)
        .filter(F.col("_kind") == 1)
        .drop("_kind", "_record")
    )


def commit_lag(commits: DataFrame, index: DataFrame) -> DataFrame:
    """The ``lag`` table: each commit with the log end then, lag in offsets and seconds."""
    moments = commits.filter(~F.col("deleted")).select(
        "group",
        "topic",
        "partition",
        "offset",
        "commit_time",
        F.col("commit_ms").alias("t_ms"),
    )
    with_end = log_end_as_of(index, moments)
    first_unconsumed = index.select(
        "topic", "partition", "offset", F.col("ts_ms").alias("_next_ms")
    )
    joined = with_end.join(first_unconsumed, ["topic", "partition", "offset"], "left")
    lag = F.greatest(F.col("log_end") - F.col("offset"), F.lit(0))
    return joined.select(
        "group",
        "topic",
        "partition",
        "commit_time",
        F.col("t_ms").alias("commit_ms"),
        F.col("offset").alias("committed_offset"),
        "log_end",
        lag.alias("lag_offsets"),
        F.when(lag == 0, F.lit(0.0))
        .otherwise((F.col("t_ms") - F.col("_next_ms")) / 1000.0)
        .alias("lag_seconds"),
    )


def ticks(commits: DataFrame, now_ms: int, interval_ms: int) -> DataFrame:
    """Evaluation moments per (group, topic, partition): every ``interval_ms`` from
    its first commit, and ``now_ms`` itself."""
    first = commits.groupBy("group", "topic", "partition").agg(F.min("commit_ms").alias("_first"))
    moments = F.array_union(
        F.sequence(
            F.col("_first"),
            F.greatest(F.col("_first"), F.lit(now_ms).cast("long")),
            F.lit(interval_ms).cast("long"),
        ),
        F.array(F.lit(now_ms)),
    )
    return first.select("group", "topic", "partition", F.explode(moments).alias("t_ms")).filter(
        F.col("t_ms") <= now_ms
    )
