"""CreatePartitions and DeleteRecords from a client, as Kafka's Admin sends
them: CreatePartitions to the controller, DeleteRecords to each partition's
leader (asked again, once, of a partition whose leader moved)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from kio.schema.create_partitions.v3 import CreatePartitionsRequest
from kio.schema.create_partitions.v3.request import CreatePartitionsTopic
from kio.schema.delete_records.v2 import DeleteRecordsRequest
from kio.schema.delete_records.v2.request import DeleteRecordsPartition, DeleteRecordsTopic
from kio.static.primitive import i32Timedelta

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i32, i64

__all__ = ["create_partitions", "delete_records"]

TopicPartition = tuple[str, int]

_TIMEOUT = i32Timedelta.parse(timedelta(seconds=30))
# A leader that moved: look it up again and ask the new one.
_MOVED = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
    }
)


async def create_partitions(
    cluster: ClusterClient, counts: Mapping[str, int], *, validate_only: bool = False
) -> dict[str, KafkaError | None]:
    """Grow each topic to its count; per topic None (done) or the error."""
    request = CreatePartitionsRequest(
        topics=tuple(
            CreatePartitionsTopic(name=TopicName(name), count=i32(count), assignments=None)
            for name, count in counts.items()
        ),
        timeout=_TIMEOUT,
        validate_only=validate_only,
    )
    conn = await cluster.controller()
    response = await conn.send(request, version=conn.version_for(apis.CREATE_PARTITIONS, 0, 3))
    out: dict[str, KafkaError | None] = {}
    for r in response.results:
        ok = r.error_code == ErrorCode.none
        out[r.name] = None if ok else KafkaError(r.error_code, r.error_message)
    return out


async def delete_records(
    cluster: ClusterClient, offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int | KafkaError]:
    """Move each partition's log start to its offset (-1: the high watermark);
    per partition the new low watermark, or the error."""
    out: dict[TopicPartition, int | KafkaError] = {}
    left = dict(offsets)
    for attempt in range(2):
        await cluster.refresh(sorted({topic for topic, _p in left}))
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, offset in left.items():
            leader = cluster.leader_id(*tp)
            if leader is None:
                info = cluster.metadata.topics.get(tp[0])
                known = info is not None and tp[1] in info.partitions
                code = (
                    ErrorCode.leader_not_available
                    if known
                    else ErrorCode.unknown_topic_or_partition
                )
                out[tp] = KafkaError(code, f"no leader known for {tp[0]}-{tp[1]}")
                continue
            by_leader.setdefault(leader, {})[tp] = offset
        left = {}
        for leader, wanted in by_leader.items():
            for tp, result in (await _delete_at(cluster, leader, wanted)).items():
                out[tp] = result
                if attempt == 0 and isinstance(result, KafkaError) and result.error_code in _MOVED:
                    left[tp] = offsets[tp]
        if not left:
            break
    return out


async def _delete_at(
    cluster: ClusterClient, leader: int, wanted: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int | KafkaError]:
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in wanted.items():
        by_topic.setdefault(topic, []).append((partition, offset))
    request = DeleteRecordsRequest(
        topics=tuple(
            DeleteRecordsTopic(
                name=TopicName(topic),
                partitions=tuple(
                    DeleteRecordsPartition(partition_index=i32(p), offset=i64(o)) for p, o in parts
                ),
            )
            for topic, parts in by_topic.items()
        ),
        timeout=_TIMEOUT,
    )
    conn = await cluster.connection(leader)
    response = await conn.send(request, version=conn.version_for(apis.DELETE_RECORDS, 0, 2))
    out: dict[TopicPartition, int | KafkaError] = {}
    for t in response.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if p.error_code == ErrorCode.none:
                out[tp] = p.low_watermark
            else:
                out[tp] = KafkaError(p.error_code, f"deleting records of {tp[0]}-{tp[1]}")
    return out
