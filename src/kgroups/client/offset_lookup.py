"""Asking partition leaders for offsets by time (ListOffsets): where a consumer
starts when it has no committed offset (auto.offset.reset), seek_to_beginning /
seek_to_end, and offsets_for_times.

The timestamps -2 and -1 mean the earliest and the latest offset. A request goes
to each partition's leader; partitions whose leader moved are retried after a
metadata refresh until the deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_record import TopicPartition
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "list_offsets"]

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1


async def list_offsets(
    cluster: ClusterClient,
    timestamps: Mapping[TopicPartition, int],
    *,
    read_committed: bool,
    request_timeout: float,
    retry_backoff: float,
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> dict[TopicPartition, int]:
    """The offset for each partition's timestamp (-1 where no record is that late)."""
    remaining = dict(timestamps)
    found: dict[TopicPartition, int] = {}
    while remaining:
        by_leader: dict[int, list[TopicPartition]] = {}
        missing = [tp for tp in remaining if cluster.leader_id(*tp) is None]
        if missing:
            await _refresh(cluster, sorted({tp.topic for tp in missing}))
        for tp in remaining:
            leader = cluster.leader_id(*tp)
            if leader is not None:
                by_leader.setdefault(leader, []).append(tp)
        results = await asyncio.gather(
            *(
                _ask(cluster, node, tps, remaining, read_committed, request_timeout)
                for node, tps in by_leader.items()
            ),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                if not isinstance(result, OSError | KafkaError):
                    raise result
                if isinstance(result, KafkaError) and not result.error_code.retriable:
                    raise result
                log.debug("ListOffsets failed, retrying: %s", result)
                continue
            for tp, offset in result.items():
                found[tp] = offset
                del remaining[tp]
        if remaining:
            if clock() + retry_backoff >= deadline:
                raise TimeoutError(f"offsets of {sorted(remaining)} not found before the deadline")
            await asyncio.sleep(retry_backoff)
            await _refresh(cluster, sorted({tp.topic for tp in remaining}))
    return found


async def _refresh(cluster: ClusterClient, topics: list[str]) -> None:
    try:
        await cluster.refresh(topics)
    except OSError as e:
        log.debug("metadata refresh failed: %s", e)


async def _ask(
    cluster: ClusterClient,
    node: int,
    partitions: list[TopicPartition],
    timestamps: Mapping[TopicPartition, int],
    read_committed: bool,
    timeout: float,
) -> dict[TopicPartition, int]:
    conn = await cluster.connection(node)
    by_topic: dict[str, list[ListOffsetsPartition]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(
            ListOffsetsPartition(
                partition_index=i32(tp.partition),
                current_leader_epoch=i32(-1),
                timestamp=i64(timestamps[tp]),
            )
        )
    request = ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(1 if read_committed else 0),
        topics=tuple(
            ListOffsetsTopic(name=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()
        ),
    )
    version = conn.version_for(apis.LIST_OFFSETS, 1, 7)
    response = await asyncio.wait_for(conn.send(request, version=version), timeout)
    out: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if p.error_code == ErrorCode.none:
                out[tp] = p.offset
            elif not p.error_code.retriable:
                raise KafkaError(p.error_code, f"listing offsets of {tp}")
    return out
