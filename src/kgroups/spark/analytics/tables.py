"""The ``commits`` and ``generations`` tables, read from the offsets topic through
the kgroups data source and decoded on the executors, or, for a small log, read by
the same reader and decoded by the same function on the driver; the share state
topic is read the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from kgroups.spark import register
from kgroups.spark.analytics.offsets_log import DECODED_SCHEMA, decode_batches
from kgroups.spark.analytics.row_types import arrow_of
from kgroups.spark.analytics.share_state_log import STATE_LOG_SCHEMA, decode_state_batches
from kgroups.spark.driver_read import arrow_table, read_here

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from kgroups.spark.analytics.arrow_map import ArrowFunction

__all__ = [
    "commits_table",
    "decoded_offsets_log",
    "decoded_share_state_log",
    "generations_table",
]


def decoded_offsets_log(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    *,
    group_pattern: str | None = None,
    streaming: bool = False,
    extra_options: dict[str, str] | None = None,
    topic_names: dict[str, str] | None = None,
    on_driver: bool = False,
) -> DataFrame:
    """Every record of the offsets topic, decoded (DECODED_SCHEMA); ``topic_names``
    (topic id as text -> name) names the topics of consumer group assignments.
    ``on_driver`` (a small log, batch only): read and decode it here, on the driver
    (kgroups.spark.driver_read), starting no Python process for it."""
    names = dict(topic_names or {})
    decoded = _decoded_log(
        spark,
        bootstrap,
        topic,
        lambda batches: decode_batches(batches, names),
        DECODED_SCHEMA,
        streaming=streaming,
        extra_options=extra_options,
        on_driver=on_driver,
    )
    if group_pattern is not None:
        decoded = decoded.filter(F.col("group").rlike(f"^(?:{group_pattern})$"))
    return decoded


def decoded_share_state_log(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    *,
    group_pattern: str | None = None,
    extra_options: dict[str, str] | None = None,
    topic_names: dict[str, str] | None = None,
    on_driver: bool = False,
) -> DataFrame:
    """Every record of the share state topic (``__share_group_state``), decoded
    (STATE_LOG_SCHEMA), read as the offsets topic is."""
    names = dict(topic_names or {})
    decoded = _decoded_log(
        spark,
        bootstrap,
        topic,
        lambda batches: decode_state_batches(batches, names),
        STATE_LOG_SCHEMA,
        extra_options=extra_options,
        on_driver=on_driver,
    )
    if group_pattern is not None:
        decoded = decoded.filter(F.col("group").rlike(f"^(?:{group_pattern})$"))
    return decoded


def _decoded_log(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    decode: ArrowFunction,
    schema: StructType,
    *,
    streaming: bool = False,
    extra_options: dict[str, str] | None = None,
    on_driver: bool = False,
) -> DataFrame:
    """``topic`` from its start, each batch of its rows decoded by ``decode``."""
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        **(extra_options or {}),
    }
    if on_driver and not streaming:
        small = read_here(options)
        assert small is not None  # read whatever its size
        raw_batches = small.select(["key", "value", "partition", "offset", "timestamp"])
        table = arrow_table(decode(iter(raw_batches.to_batches())), arrow_of(schema))
        return spark.createDataFrame(table, schema)
    register(spark)
    source = (spark.readStream if streaming else spark.read).format("kgroups")
    for key, value in options.items():
        source = source.option(key, value)
    raw = source.load().select("key", "value", "partition", "offset", "timestamp")
    return raw.mapInArrow(decode, schema)


def _ms(column: str) -> Column:
    return F.timestamp_millis(F.col(column))


def commits_table(decoded: DataFrame) -> DataFrame:
    """One row per offset commit (and per deletion, with a null offset)."""
    return decoded.filter(F.col("kind").isin("offset_commit", "offset_deleted")).select(
        "group",
        "topic",
        "partition",
        F.col("committed_offset").alias("offset"),
        "leader_epoch",
        "metadata",
        _ms("commit_ms").alias("commit_time"),
        _ms("expire_ms").alias("expire_time"),
        _ms("record_ms").alias("record_time"),
        (F.col("kind") == "offset_deleted").alias("deleted"),
        "key_version",
        "value_version",
        "offsets_partition",
        "offsets_offset",
        "commit_ms",
    )


def generations_table(decoded: DataFrame) -> DataFrame:
    """One row per stored group state: each generation, and each group deletion."""
    return decoded.filter(F.col("kind").isin("group_metadata", "group_deleted")).select(
        "group",
        "generation",
        "protocol_type",
        "protocol",
        "leader",
        _ms("state_ms").alias("state_time"),
        _ms("record_ms").alias("record_time"),
        F.coalesce("state_ms", "record_ms").alias("state_ms"),
        "record_ms",
        F.when(F.col("members").isNull(), 0).otherwise(F.size("members")).alias("member_count"),
        "members",
        (F.col("kind") == "group_deleted").alias("deleted"),
        "key_version",
        "value_version",
        "offsets_partition",
        "offsets_offset",
    )
