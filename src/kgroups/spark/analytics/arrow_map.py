"""A function over rows grouped by key and sorted, run by Spark or on the driver.

Each Python step of the analyses is a function over Arrow batches of rows that
arrive grouped by a key and sorted within it; it keeps no state across a change
of key. Spark gives it that order with a shuffle by the key, a sort within each
partition and ``mapInArrow`` in Python workers. A small input can be collected
and sorted on the driver instead, and the same function applied to it there:
the same rows come out, with no shuffle and no Python worker (on a small log
their start-up is most of the step).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from kgroups.spark.analytics.row_types import arrow_of
from kgroups.spark.driver_read import arrow_table

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["ArrowFunction", "map_sorted"]

ArrowFunction = Callable[[Iterator["pa.RecordBatch"]], Iterator["pa.RecordBatch"]]


def map_sorted(
    df: DataFrame,
    function: ArrowFunction,
    schema: StructType,
    *,
    keys: Sequence[str],
    then: Sequence[str] = (),
    on_driver: bool = False,
) -> DataFrame:
    """``function`` (rows of ``schema`` out) over the rows of ``df`` grouped by
    ``keys`` and sorted by ``keys`` then ``then``; ``on_driver``: collect ``df``
    and run it here (for an input small enough to collect)."""
    order = [*keys, *then]
    if not on_driver:
        ordered = df.repartition(*keys).sortWithinPartitions(*order)
        return ordered.mapInArrow(function, schema)
    rows = df.toArrow().sort_by([(column, "ascending") for column in order])
    table = arrow_table(function(iter(rows.to_batches())), arrow_of(schema))
    return df.sparkSession.createDataFrame(table, schema)
