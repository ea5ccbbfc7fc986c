"""A stream reader standing in for one that could not be built, raising why at first use.

Spark's streaming source process builds the reader inside a ``try`` whose
``finally`` calls ``reader.stop()``: if building it raises, the ``stop`` call
fails too (the name was never bound) and the query reports an
``UnboundLocalError`` after the real problem. Handing Spark this reader
instead lets the process start, and the first call it makes (before any task
runs) raises the original error alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["RefusedStreamReader"]


class RefusedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, error: Exception) -> None:
        self.error = error

    def _refuse(self) -> NoReturn:
        raise self.error

    def initialOffset(self) -> dict[str, Any]:
        self._refuse()

    def getDefaultReadLimit(self) -> ReadLimit:
        self._refuse()

    def prepareForTriggerAvailableNow(self) -> None:
        self._refuse()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self._refuse()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        self._refuse()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        self._refuse()

    def commit(self, end: dict[str, Any]) -> None:
        self._refuse()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        self._refuse()

    def stop(self) -> None:
        """Nothing was opened."""
