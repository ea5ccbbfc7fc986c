"""The rows of a Kafka topic in Spark, exactly as Spark's own Kafka source has them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_schema", "kafka_schema"]

HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


def kafka_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects of the batches ``read()`` yields (it checks
    equality, so it comes from Spark's own conversion)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(kafka_schema(include_headers), timezone="UTC")
