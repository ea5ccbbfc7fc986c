"""Reading one offset range on an executor: Fetch requests to the partition's
leader, decoded into Arrow record batches.

The next Fetch is sent before the current response is decoded, so the broker
and the network work while this process decodes (one request ahead, on an event
loop thread of its own). Offsets below the log start (deleted by retention)
and offsets past the log end (a truncated or re-created topic) are data loss:
an error under ``failOnDataLoss`` (the default), otherwise a warning and the
range goes on with what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgroups.client.aborted_filter import AbortedFilter
from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.fetch_request import FetchRequests
from kgroups.client.loop_thread import LoopThread
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.apis import FETCH
from kgroups.records.batch import iter_batches
from kgroups.spark.offset_ranges import OffsetRange
from kgroups.spark.record_columns import RecordColumns

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DataLossError", "ReadSettings", "read_range"]

log = logging.getLogger(__name__)

_RETRIES = 5
_STALE_METADATA = {
    ErrorCode.not_leader_or_follower,
    ErrorCode.leader_not_available,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.kafka_storage_error,
    ErrorCode.replica_not_available,
}


class DataLossError(RuntimeError):
    """Records a range was planned to read are gone (failOnDataLoss=true)."""


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """What an executor needs to read ranges; travels pickled with the reader."""

    bootstrap: str
    consumer: dict[str, str] = field(default_factory=dict, repr=False)  # may hold a password
    include_headers: bool = False
    index_only: bool = False
    fail_on_data_loss: bool = True


@dataclass(slots=True)
class _Response:
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    aborted: Any


class _PartitionFetcher:
    """Fetch requests for one partition, sent from the loop thread."""

    def __init__(self, settings: ReadSettings, config: ConsumerConfig, topic: str, p: int) -> None:
        self.cluster = ClusterClient(settings.bootstrap, config.client_id, config.security)
        self.config = config
        self.topic = topic
        self.partition = p
        self._tp = TopicPartition(topic, p)
        self._requests = FetchRequests(config)
        self.read_committed = self._requests.read_committed

    async def fetch(self, offset: int) -> _Response:
        for attempt in range(_RETRIES + 1):
            try:
                conn = await self.cluster.leader(self.topic, self.partition)
                request = self._requests.request({self._tp: offset})
                response = await asyncio.wait_for(
                    conn.send(request, version=conn.version_for(FETCH, 4, 12)),
                    self._requests.timeout,
                )
                p = response.responses[0].partitions[0]
                if p.error_code in _STALE_METADATA and attempt < _RETRIES:
                    raise KafkaError(p.error_code, "leader moved")
                return _Response(
                    p.error_code,
                    p.high_watermark,
                    p.log_start_offset,
                    bytes(p.records or b""),
                    p.aborted_transactions,
                )
            except (OSError, TimeoutError, KafkaError) as e:
                if attempt == _RETRIES:
                    raise
                log.info("fetch of %s-%s failed (%s); retrying", self.topic, self.partition, e)
                await asyncio.sleep(self.config.retry_backoff_ms / 1000 * (attempt + 1))
                await self.cluster.close()
                await self.cluster.refresh([self.topic])
        raise AssertionError("unreachable")


def read_range(
    r: OffsetRange, settings: ReadSettings, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """The records of ``r`` as Arrow batches of Spark's Kafka schema, one per Fetch."""
    if r.size == 0:
        return
    config = ConsumerConfig.from_dict(
        {"bootstrap.servers": settings.bootstrap, **settings.consumer}
    )
    thread = LoopThread(f"kgroups-read-{r.topic}-{r.partition}")
    fetcher = _PartitionFetcher(settings, config, r.topic, r.partition)
    columns = RecordColumns(
        include_headers=settings.include_headers, index_only=settings.index_only
    )
    aborted = AbortedFilter(fetcher.read_committed)
    position = r.start
    pending: Future[_Response] | None = thread.submit(fetcher.fetch(position))
    try:
        while pending is not None:
            response = pending.result()
            pending = None
            if response.error == ErrorCode.offset_out_of_range:
                position = _lost(r, settings, position, response)
                if position < r.end:
                    pending = thread.submit(fetcher.fetch(position))
                continue
            if response.error != ErrorCode.none:
                raise KafkaError(response.error, f"fetching {r.topic}-{r.partition}@{position}")
            view = memoryview(response.records)
            batches = list(iter_batches(view))
            if not batches:
                if response.high_watermark <= position:
                    _lost(r, settings, position, response)
                    return
                pending = thread.submit(fetcher.fetch(position))
                continue
            following = batches[-1][1].next_offset
            if following < r.end:
                pending = thread.submit(fetcher.fetch(following))
            aborted.add_response(response.aborted)
            for pos, header in batches:
                if header.next_offset <= position or header.base_offset >= r.end:
                    continue
                batch = view[pos : pos + header.size]
                if aborted.skip(batch, header):
                    continue
                columns.add_batch(batch, header, position, r.end)
            position = following
            if len(columns):
                records = columns.to_arrow(r.topic, r.partition, schema)
                columns.clear()
                if records.num_rows:
                    yield records
    finally:
        if pending is not None:
            pending.cancel()
        thread.call(fetcher.cluster.close())
        thread.stop()


def _lost(r: OffsetRange, settings: ReadSettings, position: int, response: _Response) -> int:
    """Report records of ``r`` that are gone; returns where reading can go on."""
    resume = response.log_start_offset if position < response.log_start_offset else r.end
    gone = f"[{position}, {min(resume, r.end)})"
    message = (
        f"{r.topic}-{r.partition}: offsets {gone} planned for reading are no longer available "
        f"(log start {response.log_start_offset}, log end {response.high_watermark}); "
        "records were deleted by retention or the topic was truncated or re-created"
    )
    if settings.fail_on_data_loss:
        raise DataLossError(
            message + ". Set failOnDataLoss=false to go on without them (they are lost)."
        )
    log.warning("%s; going on (failOnDataLoss=false)", message)
    return resume
