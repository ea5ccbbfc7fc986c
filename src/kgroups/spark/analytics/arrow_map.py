"""``mapInArrow``, or the same function applied on the driver to a small input.

Each Python step of the analyses is a function over Arrow batches of rows that
Spark has partitioned and sorted by key; it keeps no state across a change of
key. Collected in partition order, a small input is the concatenation of those
partitions, so the function gives the same rows run here, and Spark starts no
Python worker for it (on a small log their start-up is most of the step).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kgroups.spark.analytics.row_types import arrow_of
from kgroups.spark.driver_read import arrow_table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["ArrowFunction", "map_in_arrow"]

ArrowFunction = Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]


def map_in_arrow(
    df: DataFrame, function: ArrowFunction, schema: StructType, *, on_driver: bool = False
) -> DataFrame:
    """``df.mapInArrow(function, schema)``; ``on_driver``: collect ``df`` and apply
    ``function`` here (for an input small enough to collect)."""
    if not on_driver:
        return df.mapInArrow(function, schema)
    rows = df.toArrow().to_batches()
    table = arrow_table(function(iter(rows)), arrow_of(schema))
    return df.sparkSession.createDataFrame(table, schema)
