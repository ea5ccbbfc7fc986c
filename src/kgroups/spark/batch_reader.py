"""Batch reads: ``spark.read.format("kgroups")``.

``partitions()`` runs once, in the driver's planning process: it resolves the
topic selection, asks the leaders for the start and end offsets, and returns
one offset range per partition (split further for ``maxRecordsPerPartition``
and ``minPartitions``). ``read()`` runs in an executor per range and fetches the
records itself: no record ever passes through the driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition

from kgroups.spark.cluster_calls import ClusterCalls
from kgroups.spark.offset_ranges import OffsetRange, split_ranges
from kgroups.spark.options import OptionError, ReadOptions
from kgroups.spark.range_reader import ReadSettings, read_range
from kgroups.spark.schema import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KafkaBatchReader", "read_settings"]


def read_settings(options: ReadOptions) -> ReadSettings:
    return ReadSettings(
        bootstrap=options.bootstrap,
        consumer=dict(options.consumer),
        include_headers=options.include_headers,
        index_only=options.index_only,
        fail_on_data_loss=options.fail_on_data_loss,
    )


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.settings = read_settings(options)

    def partitions(self) -> list[InputPartition]:
        options = self.options
        with ClusterCalls(
            options.bootstrap,
            read_committed=options.read_committed,
            security_keys=options.security_keys,
        ) as calls:
            partitions = calls.partitions(options.selection)
            starts = calls.offsets({tp: options.starting.wanted(tp) for tp in partitions})
            ends = calls.offsets({tp: options.ending.wanted(tp) for tp in partitions})
            earliest = calls.offsets({tp: -2 for tp in partitions})
        named = ((options.starting, "startingOffsets"), (options.ending, "endingOffsets"))
        for spec, name in named:
            unknown = set(spec.partitions) - set(partitions)
            if unknown:
                listed = ", ".join(f"{t}-{p}" for t, p in sorted(unknown))
                raise OptionError(name, f"names partitions that are not read: {listed}")
        ranges = []
        for tp in partitions:
            start = options.starting.exact(tp)
            start = starts[tp] if start is None else start
            end = options.ending.exact(tp)
            end = ends[tp] if end is None else end
            if start < earliest[tp] and options.fail_on_data_loss:
                raise OptionError(
                    "startingOffsets",
                    f"{tp[0]}-{tp[1]} starts at {start} but its records begin at {earliest[tp]} "
                    "(set failOnDataLoss=false to read from there)",
                )
            start = max(start, earliest[tp])
            if end < start:
                raise OptionError(
                    "endingOffsets", f"{tp[0]}-{tp[1]} would end at {end}, before its start {start}"
                )
            if end > start:
                ranges.append(OffsetRange(tp[0], tp[1], start, end))
        return list(split_ranges(ranges, options.min_partitions, options.max_records_per_partition))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return  # Spark's placeholder when there is nothing to read
        yield from read_range(partition, self.settings, arrow_schema(self.options.include_headers))
