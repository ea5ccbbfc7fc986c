"""DescribeLogDirs from a client, as Kafka's Admin.describeLogDirs sends it:
one request to each broker asked (all of them by default), each answering
for its own log directories."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.describe_log_dirs.v4 import DescribeLogDirsRequest
from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i32

__all__ = ["LogDirDescription", "ReplicaInfo", "describe_log_dirs"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    path: str
    error: ErrorCode
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int = -1
    """-1 when the broker does not tell (before v4, or it cannot know)."""
    usable_bytes: int = -1


async def describe_log_dirs(
    cluster: ClusterClient,
    brokers: Iterable[int] | None = None,
    partitions: Mapping[str, Iterable[int]] | None = None,
) -> dict[int, list[LogDirDescription] | KafkaError]:
    """Each broker's log directories, with the partitions asked for (None: all);
    a broker that refused or could not be reached answers its error."""
    await cluster.refresh([])
    asked = sorted(cluster.metadata.brokers) if brokers is None else list(dict.fromkeys(brokers))
    request = DescribeLogDirsRequest(
        topics=None
        if partitions is None
        else tuple(
            DescribableLogDirTopic(
                topic=TopicName(t), partitions=tuple(i32(p) for p in sorted(set(ps)))
            )
            for t, ps in partitions.items()
        )
    )
    out: dict[int, list[LogDirDescription] | KafkaError] = {}
    for broker in asked:
        try:
            out[broker] = await _describe_at(cluster, broker, request)
        except KafkaError as e:
            out[broker] = e
    return out


async def _describe_at(
    cluster: ClusterClient, broker: int, request: DescribeLogDirsRequest
) -> list[LogDirDescription]:
    if cluster.address(broker) is None:
        raise KafkaError(ErrorCode.broker_not_available, f"no broker {broker} in the cluster")
    conn = await cluster.connection(broker)
    response = await conn.send(request, version=conn.version_for(apis.DESCRIBE_LOG_DIRS, 1, 4))
    error = getattr(response, "error_code", ErrorCode.none)  # top-level from v3
    if error != ErrorCode.none:
        raise KafkaError(error, f"describing the log directories of broker {broker}")
    return [
        LogDirDescription(
            path=r.log_dir,
            error=r.error_code,
            replicas={
                (t.name, p.partition_index): ReplicaInfo(
                    p.partition_size, p.offset_lag, p.is_future_key
                )
                for t in r.topics
                for p in t.partitions
            },
            total_bytes=getattr(r, "total_bytes", -1),
            usable_bytes=getattr(r, "usable_bytes", -1),
        )
        for r in response.results
    ]
