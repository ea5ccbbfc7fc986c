"""DescribeProducers from a client, as Kafka's Admin.describeProducers sends
it: to each partition's leader (asked again, once, of a partition whose
leader moved), or to one broker named by the caller."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kio.schema.describe_producers.v0 import DescribeProducersRequest
from kio.schema.describe_producers.v0.request import TopicRequest

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i32

__all__ = ["ProducerState", "describe_producers"]

TopicPartition = tuple[str, int]

_MOVED = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.leader_not_available})


@dataclass(frozen=True, slots=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int
    """-1 when the producer has no open transaction on the partition."""


async def describe_producers(
    cluster: ClusterClient, partitions: Iterable[TopicPartition], broker: int | None = None
) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
    """The active producers of each partition, or why they could not be told."""
    left = list(dict.fromkeys(partitions))
    out: dict[TopicPartition, list[ProducerState] | KafkaError] = {}
    for attempt in range(1 if broker is not None else 2):
        await cluster.refresh(sorted({topic for topic, _p in left}))
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp in left:
            node = broker if broker is not None else cluster.leader_id(*tp)
            if node is None:
                known = tp[0] in cluster.metadata.topics
                code = (
                    ErrorCode.leader_not_available
                    if known
                    else ErrorCode.unknown_topic_or_partition
                )
                out[tp] = KafkaError(code, f"no leader known for {tp[0]}-{tp[1]}")
                continue
            by_broker.setdefault(node, []).append(tp)
        left = []
        for node, wanted in by_broker.items():
            for tp, result in (await _describe_at(cluster, node, wanted)).items():
                out[tp] = result
                moved = isinstance(result, KafkaError) and result.error_code in _MOVED
                if attempt == 0 and broker is None and moved:
                    left.append(tp)
        if not left:
            break
    return out


async def _describe_at(
    cluster: ClusterClient, node: int, wanted: list[TopicPartition]
) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in wanted:
        by_topic.setdefault(topic, []).append(partition)
    request = DescribeProducersRequest(
        topics=tuple(
            TopicRequest(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps))
            for t, ps in by_topic.items()
        )
    )
    conn = await cluster.connection(node)
    response = await conn.send(request, version=conn.version_for(apis.DESCRIBE_PRODUCERS, 0, 0))
    out: dict[TopicPartition, list[ProducerState] | KafkaError] = {}
    for t in response.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if p.error_code != ErrorCode.none:
                what = p.error_message or f"describing the producers of {tp[0]}-{tp[1]}"
                out[tp] = KafkaError(p.error_code, what)
                continue
            out[tp] = [
                ProducerState(
                    s.producer_id,
                    s.producer_epoch,
                    s.last_sequence,
                    s.last_timestamp,
                    s.coordinator_epoch,
                    s.current_txn_start_offset,
                )
                for s in p.active_producers
            ]
    return out
