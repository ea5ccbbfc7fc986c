"""The ``kgroups`` data source: Spark's Kafka source and sink over the Kafka protocol.

Spark pickles this object to every process that plans or runs a read or a
write, so it holds only the options; each method parses and checks them, and a
bad option fails the query before any task starts.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kgroups.spark.batch_reader import KafkaBatchReader
from kgroups.spark.options import ReadOptions, WriteOptions
from kgroups.spark.refused_stream_reader import RefusedStreamReader
from kgroups.spark.schema import kafka_schema
from kgroups.spark.stream_reader import KafkaStreamReader
from kgroups.spark.writer import KafkaBatchWriter, KafkaStreamWriter, check_write_schema

__all__ = ["KafkaDataSource"]


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kgroups"

    def schema(self) -> StructType:
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return kafka_schema(include)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(ReadOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        try:
            return KafkaStreamReader(ReadOptions.parse(self.options, streaming=True))
        except Exception as e:  # reported by the reader's first call: see RefusedStreamReader
            return RefusedStreamReader(e)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = WriteOptions.parse(self.options)
        check_write_schema(schema, options)
        return KafkaBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = WriteOptions.parse(self.options)
        check_write_schema(schema, options)
        return KafkaStreamWriter(options)
