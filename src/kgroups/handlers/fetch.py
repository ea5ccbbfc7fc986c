"""Fetch with long polling.

The broker answers at once when it has `min_bytes` or an error to report;
otherwise it parks the request until an append to one of the fetched
partitions or `max_wait` passes, then reads again. Batches go out exactly as
they were stored: no decompression, no re-encoding. Read from local segment
files for a plaintext connection, they are not even read: each partition's
records are the region of its segment file that holds them, which the
connection sends from file to socket (handlers/response_parts.py).

A partition named more than once is fetched once (fetch_partitions.py).

Each partition's current leader epoch (v9+) is checked before it is read, as
Kafka checks it: FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH for that partition.
The epochs of a follower's fetch (last_fetched_epoch, diverging_epoch) are not:
kgroups has no followers.

At isolation level read_committed (1) records are read only up to the last
stable offset, and the aborted transactions overlapping what is returned are
listed, for the consumer to drop their records. Both levels report the LSO.
What a log does not hold in memory (in cluster mode, older batches and
aborts) its home reads, within the same bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from kio.schema.fetch.v12 import FetchRequest, FetchResponse
from kio.schema.fetch.v12.response import (
    AbortedTransaction,
    FetchableTopicResponse,
    PartitionData,
)
from kio.static.primitive import Records

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.current_leader_epoch import check_current_leader_epoch
from kgroups.handlers.fetch_partitions import distinct_partitions
from kgroups.handlers.throttling import user_of
from kgroups.partitions.log import NotInMemory, PartitionLog, PartitionRead
from kgroups.protocol.types import BrokerId, ProducerId, i32, i64
from kgroups.quotas.entities import CONSUMER_BYTE_RATE
from kgroups.records.batch import iter_batches
from kgroups.records.file_region import FileRegion

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_EMPTY = cast(Records, b"")
_NO_REPLICA = BrokerId(-1)
READ_COMMITTED = 1


async def handle(broker: BrokerApi, ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    request = _within_quota_window(broker, ctx, distinct_partitions(request))
    max_wait_ms = int(request.max_wait.total_seconds() * 1000)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait_ms / 1000
    wanted = [(t.topic, p.partition) for t in request.topics for p in t.partitions]
    while True:
        # Register before reading so an append between the read and the wait wakes us.
        waiter = broker.append_waiters.register(wanted)
        try:
            topics, size, failed, misses = _read(broker, request, ctx.file_regions)
            if misses:
                committed = request.isolation_level == READ_COMMITTED
                topics, size, failed = await _read_store(
                    broker, topics, size, failed, misses, committed
                )
            if failed and not broker.partitions.leads_everything:
                topics = await _confirm_out_of_range(broker, topics)
            remaining = deadline - loop.time()
            if size >= request.min_bytes or failed or remaining <= 0 or broker.closing:
                if size:
                    _count_bytes_out(broker, topics)
                return FetchResponse(
                    throttle_time=NO_THROTTLE,
                    error_code=ErrorCode.none,
                    session_id=i32(0),
                    responses=topics,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), remaining)
        finally:
            broker.append_waiters.unregister(wanted, waiter)


def _within_quota_window(
    broker: BrokerApi, ctx: RequestContext, request: FetchRequest
) -> FetchRequest:
    """As Kafka: a consumer under consumer_byte_rate fetches at most what its
    quota allows over the measured windows but one, so one response alone is
    not sure to be throttled."""
    most = quota_window_bytes(broker, ctx)
    if most is None or most >= request.max_bytes:
        return request
    max_bytes = i32(max(most, 1))
    return replace(request, max_bytes=max_bytes, min_bytes=i32(min(request.min_bytes, max_bytes)))


def quota_window_bytes(broker: BrokerApi, ctx: RequestContext) -> int | None:
    """The most bytes one fetch of this client can take without being sure
    to be throttled (None: no consumer_byte_rate quota applies)."""
    if not broker.quotas.sets(CONSUMER_BYTE_RATE):
        return None
    most = broker.quotas.most_in_window(CONSUMER_BYTE_RATE, user_of(ctx.principal), ctx.client_id)
    return None if most is None else int(most)


def _count_bytes_out(broker: BrokerApi, topics: tuple[FetchableTopicResponse, ...]) -> None:
    for topic in topics:
        size = sum(len(p.records) for p in topic.partitions if p.records)
        if size:
            broker.stats.fetched(topic.topic, size)


# (topic index, partition index, what to read) of the partitions whose offsets
# their log does not hold in memory (in cluster mode, older batches).
_Miss = tuple[int, int, PartitionRead]


def _read(
    broker: BrokerApi, request: FetchRequest, regions: bool
) -> tuple[tuple[FetchableTopicResponse, ...], int, bool, list[_Miss]]:
    # As Kafka: the request's max_bytes, capped by the broker's fetch.max.bytes,
    # bounds the response, and each partition its partition_max_bytes; only the
    # first non-empty partition may exceed them by one whole batch (KIP-74).
    budget: int = min(request.max_bytes, broker.config.get_int("fetch.max.bytes"))
    total = 0
    failed = False
    faults = broker.faults
    topics: list[FetchableTopicResponse] = []
    misses: list[_Miss] = []
    committed = request.isolation_level == READ_COMMITTED
    for topic in request.topics:
        partitions: list[PartitionData] = []
        for p in topic.partitions:
            error = ErrorCode.none
            data: bytes | FileRegion = b""
            hw = start = lso = -1
            aborted = None
            # Only the first partition read (from memory or the store) may
            # take a whole batch beyond the limits.
            first = total == 0 and not misses
            limit = min(p.partition_max_bytes, budget)
            try:
                log = broker.partitions.log(topic.topic, p.partition)
                if p.current_leader_epoch >= 0:  # any epoch below zero asks for no check
                    check_current_leader_epoch(log, p.current_leader_epoch)
                hw, start = log.high_watermark, log.log_start_offset
                lso = log.last_stable_offset
                if (limit > 0 or first) and not (
                    faults.active and faults.is_paused(topic.topic, p.partition)
                ):
                    read_log = log.read_region if regions else log.read
                    data = read_log(
                        p.fetch_offset,
                        max(limit, 0),
                        max_offset=lso if committed else hw,
                        min_one=first,
                    )
                if committed:
                    aborted = _aborted(log, p.fetch_offset, data)
            except NotInMemory:
                data = b""  # read again by the home, with what the log lacked
                aborted = () if committed else None
                end = lso if committed else hw
                read = PartitionRead(
                    topic.topic, p.partition, p.fetch_offset, max(limit, 0), end, min_one=first
                )
                misses.append((len(topics), len(partitions), read))
                # Its bytes are known only once read: the most it may take is set aside.
                budget -= max(limit, 0)
            except KafkaError as e:
                error, failed = e.error_code, True
            total += len(data)
            budget -= len(data)
            partitions.append(
                PartitionData(
                    partition_index=p.partition,
                    error_code=error,
                    high_watermark=i64(hw),
                    last_stable_offset=i64(lso),
                    log_start_offset=i64(start),
                    aborted_transactions=aborted,
                    preferred_read_replica=_NO_REPLICA,
                    records=cast(Records, data) if data else _EMPTY,
                )
            )
        topics.append(FetchableTopicResponse(topic=topic.topic, partitions=tuple(partitions)))
    return tuple(topics), total, failed, misses


async def _confirm_out_of_range(
    broker: BrokerApi, topics: tuple[FetchableTopicResponse, ...]
) -> tuple[FetchableTopicResponse, ...]:
    """In a cluster, an offset beyond this broker's log end may be one a new
    leader wrote after the partition moved, before this broker's next read of
    the store shows the move; a consumer told OFFSET_OUT_OF_RANGE would reset
    its position. The store says whether this broker still leads."""
    confirmed = []
    for t in topics:
        partitions = list(t.partitions)
        for i, p in enumerate(partitions):
            if p.error_code != ErrorCode.offset_out_of_range:
                continue
            try:
                plog = broker.partitions.log(t.topic, p.partition_index)
                led = await broker.partitions.confirm_leadership(t.topic, p.partition_index, plog)
            except KafkaError:
                led = False
            if not led:
                partitions[i] = replace(p, error_code=ErrorCode.not_leader_or_follower)
        confirmed.append(replace(t, partitions=tuple(partitions)))
    return tuple(confirmed)


def _aborted(
    log: PartitionLog, fetch_offset: int, data: bytes | FileRegion
) -> tuple[AbortedTransaction, ...]:
    """The aborted transactions overlapping the batches read."""
    if not data:
        return ()
    end = data.end_offset if isinstance(data, FileRegion) else _end_of(data, fetch_offset)
    return _answer(log.aborted_transactions(fetch_offset, end))


def _end_of(data: bytes, fetch_offset: int) -> int:
    end = fetch_offset
    for _pos, header in iter_batches(data):
        end = header.next_offset
    return end


def _answer(aborted: list[tuple[int, int]]) -> tuple[AbortedTransaction, ...]:
    return tuple(
        AbortedTransaction(producer_id=ProducerId(pid), first_offset=i64(first))
        for pid, first in aborted
    )


async def _read_store(
    broker: BrokerApi,
    topics: tuple[FetchableTopicResponse, ...],
    size: int,
    failed: bool,
    misses: list[_Miss],
    committed: bool,
) -> tuple[tuple[FetchableTopicResponse, ...], int, bool]:
    """Fill in the partitions the home reads (from the store), in one call off the
    loop; at read_committed, with the aborted transactions the home finds."""
    home = broker.partitions
    results = await home.read_many([read for _t, _p, read in misses])
    partitions = [list(t.partitions) for t in topics]
    for (ti, pi, read), result in zip(misses, results, strict=True):
        data = partitions[ti][pi]
        if committed and result and not isinstance(result, KafkaError):
            end = _end_of(result, read.offset)
            try:
                aborted = await home.aborted_transactions(
                    read.topic, read.partition, read.offset, end
                )
                data = replace(data, aborted_transactions=_answer(aborted))
            except KafkaError as e:
                result = e
        if isinstance(result, KafkaError):
            partitions[ti][pi] = replace(data, error_code=result.error_code)
            failed = True
        else:
            partitions[ti][pi] = replace(data, records=cast(Records, result) if result else _EMPTY)
            size += len(result)
    topics = tuple(
        replace(t, partitions=tuple(ps)) for t, ps in zip(topics, partitions, strict=True)
    )
    return topics, size, failed
