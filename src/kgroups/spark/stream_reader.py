"""Streaming reads: ``spark.readStream.format("kgroups")``.

Offsets are per-partition positions kept by Spark in the query's checkpoint (the
source of truth: a restarted query goes on from there, with no gap and no
duplicate). Each trigger, ``latestOffset`` looks up the partitions the selection
names now (new ones start at their earliest offset) and their log end offsets,
capped by ``maxOffsetsPerTrigger``; ``partitions`` turns the step into offset
ranges that executors fetch.

With option ``group.id``, progress is also committed to that consumer group, as
standalone commits, so lag tools see the query. Spark calls ``commit(end)`` one
batch late and not at all while idle, so the offsets a trigger starts from
(which Spark only hands over once the batch before has completed) are committed
too: the group trails the query by at most the micro-batch in flight.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kgroups.errors import KafkaError
from kgroups.spark.batch_reader import read_settings
from kgroups.spark.cluster_calls import ClusterCalls
from kgroups.spark.offset_ranges import OffsetRange, cap_offsets, plan_ranges, split_ranges
from kgroups.spark.offset_spec import EARLIEST, LATEST, Offsets, offsets_from_json, offsets_json
from kgroups.spark.options import ReadOptions
from kgroups.spark.range_reader import DataLossError, read_range
from kgroups.spark.schema import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KafkaStreamReader"]

log = logging.getLogger(__name__)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: ReadOptions) -> None:
        # Spark builds readers in several processes: nothing here may touch the network.
        self.options = options
        self.settings = read_settings(options)
        self.calls = ClusterCalls(
            options.bootstrap,
            read_committed=options.read_committed,
            security_keys=options.security_keys,
        )
        self._target: Offsets | None = None
        self._latest: Offsets | None = None
        self._committed: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "settings": self.settings, "calls": self.calls}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._target = self._latest = self._committed = None

    # -- planning (the driver's streaming source process) ---------------------

    def initialOffset(self) -> dict[str, Any]:
        partitions = self.calls.partitions(self.options.selection)
        starting = self.options.starting
        found = self.calls.offsets({tp: starting.wanted(tp) for tp in partitions})
        for tp in partitions:
            exact = starting.exact(tp)
            if exact is not None:
                found[tp] = exact
        return offsets_json(found)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read up to what is there now, then stop."""
        self._target = self._log_ends()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_from_json(start)
        self._commit_progress(begin)
        latest = self._target if self._target is not None else self._log_ends()
        self._latest = latest
        for tp in set(begin) - set(latest):
            self._partition_gone(tp)
        new = [tp for tp in latest if tp not in begin]
        begin_all = {**self.calls.offsets({tp: EARLIEST for tp in new}), **begin}
        end = {tp: max(offset, begin_all[tp]) for tp, offset in latest.items()}
        if isinstance(limit, ReadMaxRows):
            end = cap_offsets(begin_all, end, limit.max_rows)
        # A partition first seen now with nothing to read still enters the offsets,
        # so that its records from here on are read.
        return offsets_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else offsets_json(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin = offsets_from_json(start)
        stop = offsets_from_json(end)
        new = [tp for tp in stop if tp not in begin]
        if new:
            begin = {**self.calls.offsets({tp: EARLIEST for tp in new}), **begin}
        ranges = plan_ranges(begin, stop)
        return list(
            split_ranges(
                ranges, self.options.min_partitions, self.options.max_records_per_partition
            )
        )

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_progress(offsets_from_json(end))

    def stop(self) -> None:
        self.calls.close()

    # -- reading (executors) --------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return
        yield from read_range(partition, self.settings, arrow_schema(self.options.include_headers))

    # -- helpers ---------------------------------------------------------------

    def _log_ends(self) -> Offsets:
        partitions = self.calls.partitions(self.options.selection)
        return self.calls.offsets({tp: LATEST for tp in partitions})

    def _partition_gone(self, tp: tuple[str, int]) -> None:
        message = f"{tp[0]}-{tp[1]} is no longer in the cluster (topic deleted?)"
        if self.options.fail_on_data_loss:
            raise DataLossError(message + "; set failOnDataLoss=false to go on without it")
        log.warning("%s; going on without it (failOnDataLoss=false)", message)

    def _commit_progress(self, offsets: Mapping[tuple[str, int], int]) -> None:
        group = self.options.group_id
        if group is None or not offsets or offsets == self._committed:
            return
        try:
            self.calls.commit(group, dict(offsets))
            self._committed = dict(offsets)
        except (KafkaError, OSError, TimeoutError) as e:
            # The checkpoint decides what is read; a failed commit only delays what
            # lag monitors see, and the next trigger commits again.
            log.warning("committing the stream's progress to group %r failed: %s", group, e)
