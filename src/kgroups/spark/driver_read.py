"""A small batch read done on the driver by the data source's own reader.

``spark.read.format("kgroups")`` costs Python processes before any record moves:
Spark looks the source up, creates its reader and plans the ranges, each in a
process of its own, and then reads in Python workers. On a read of a few thousand
records that is nearly all its time. ``read_here`` plans and reads the ranges in
this process with the same KafkaBatchReader (same options, same security keys,
same range reader), so the rows are those the executors would have read, as one
Arrow table of Spark's Kafka schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kgroups.spark.batch_reader import KafkaBatchReader
from kgroups.spark.offset_ranges import OffsetRange
from kgroups.spark.options import ReadOptions
from kgroups.spark.schema import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_table", "read_here"]


def read_here(options: Mapping[str, str], max_records: int | None = None) -> pa.Table | None:
    """The rows ``spark.read.format("kgroups").options(**options).load()`` holds,
    read in this process; None when its ranges hold more than ``max_records``
    records (then the executors should read them)."""
    parsed = ReadOptions.parse(options, streaming=False)
    reader = KafkaBatchReader(parsed)
    ranges = [r for r in reader.partitions() if isinstance(r, OffsetRange)]
    if max_records is not None and sum(r.size for r in ranges) > max_records:
        return None
    schema = arrow_schema(parsed.include_headers)
    return arrow_table([b for r in ranges for b in reader.read(r)], schema)


def arrow_table(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """``batches`` as a table for ``spark.createDataFrame``: with one empty batch
    when there is none, as PySpark cannot convert a table of no chunks."""
    import pyarrow as pa

    empty = pa.RecordBatch.from_pylist([], schema=schema)
    return pa.Table.from_batches(list(batches) or [empty], schema)
