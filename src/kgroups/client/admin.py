"""Administration over the wire: the calls behind `kgroups groups ...`, the
offset look-ups of `kgroups topics describe` and `kgroups consume`,
`kgroups topics alter`, `kgroups records delete`, `kgroups log-dirs describe`,
`kgroups configs` and `kgroups share-groups`, and the producers of partitions (DescribeProducers).

Speaks only the Kafka protocol, so it works against any Kafka cluster.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import TypeVar

from kio.schema.consumer_group_describe.v1 import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_describe.v1.response import DescribedGroup as DescribedConsumerGroup
from kio.schema.delete_groups.v2 import DeleteGroupsRequest
from kio.schema.describe_groups.v5 import DescribeGroupsRequest
from kio.schema.describe_groups.v5.response import DescribedGroup
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.list_groups.v5 import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListedGroup
from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.offset_commit.v9 import OffsetCommitRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0 import OffsetDeleteRequest
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v9 import OffsetFetchRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup

from kgroups.client.cluster import ClusterClient
from kgroups.client.config_admin import (
    ConfigEntry,
    Op,
    Resource,
    describe_configs,
    incremental_alter_configs,
    list_client_metrics_resources,
)
from kgroups.client.connection import BrokerConnection
from kgroups.client.log_dirs import LogDirDescription, describe_log_dirs
from kgroups.client.partition_admin import create_partitions, delete_records
from kgroups.client.producer_states import ProducerState, describe_producers
from kgroups.client.quota_admin import (
    Change,
    Filter,
    QuotaEntity,
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
)
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.client.share_group_admin import (
    DescribedShareGroup,
    ShareOffset,
    alter_share_group_offsets,
    delete_share_group_offsets,
    describe_share_group,
    describe_share_group_offsets,
)
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, GroupId, TopicName, i8, i32, i64

TopicPartition = tuple[str, int]
T = TypeVar("T")
LATEST = -1
EARLIEST = -2


def _check(error: ErrorCode, what: str) -> None:
    if error != ErrorCode.none:
        raise KafkaError(error, what)


# Errors after which the group's coordinator must be looked up again.
_COORDINATOR_MOVED = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available})


class Admin:
    """Topic offsets and group administration against a cluster."""

    def __init__(
        self,
        bootstrap: str,
        cluster: ClusterClient | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.cluster = cluster or ClusterClient(bootstrap, "kgroups-admin", security)
        self._coordinators: dict[str, int] = {}

    async def close(self) -> None:
        await self.cluster.close()

    async def coordinator(self, group: str) -> BrokerConnection:
        node = self._coordinators.get(group)
        if node is not None:
            return await self.cluster.connection(node)
        conn = await self.cluster.any_connection()
        response = await conn.send(
            FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)),
            version=conn.version_for(apis.FIND_COORDINATOR, 4, 4),
        )
        found = response.coordinators[0]
        _check(found.error_code, f"finding the coordinator of group {group!r}")
        if found.node_id not in self.cluster.metadata.brokers:
            await self.cluster.refresh([])
        self._coordinators[group] = found.node_id
        return await self.cluster.connection(found.node_id)

    async def find_coordinators(
        self, groups: Iterable[str]
    ) -> dict[str, tuple[int, str, int] | KafkaError]:
        """Each group's coordinator (broker id, host, port), in one FindCoordinator."""
        keys = tuple(dict.fromkeys(groups))
        if not keys:
            return {}
        conn = await self.cluster.any_connection()
        response = await conn.send(
            FindCoordinatorRequest(key_type=i8(0), coordinator_keys=keys),
            version=conn.version_for(apis.FIND_COORDINATOR, 4, 4),
        )
        found: dict[str, tuple[int, str, int] | KafkaError] = {}
        for c in response.coordinators:
            if c.error_code == ErrorCode.none:
                found[c.key] = (c.node_id, c.host, c.port)
            else:
                found[c.key] = KafkaError(c.error_code, c.error_message)
        return found

    def _group_check(self, group: str, error: ErrorCode, what: str) -> None:
        if error in _COORDINATOR_MOVED:
            self._coordinators.pop(group, None)
        _check(error, what)

    async def list_groups(self, states: Iterable[str] = ()) -> list[ListedGroup]:
        await self.cluster.refresh([])
        groups: list[ListedGroup] = []
        for node in sorted(self.cluster.metadata.brokers):
            conn = await self.cluster.connection(node)
            version = conn.version_for(apis.LIST_GROUPS, 0, 5)
            response = await conn.send(
                ListGroupsRequest(states_filter=tuple(states), types_filter=()), version=version
            )
            _check(response.error_code, "listing groups")
            groups.extend(response.groups)
        return sorted(groups, key=lambda g: g.group_id)

    async def describe(self, group: str) -> DescribedGroup:
        conn = await self.coordinator(group)
        response = await conn.send(
            DescribeGroupsRequest(groups=(GroupId(group),), include_authorized_operations=False),
            version=conn.version_for(apis.DESCRIBE_GROUPS, 0, 5),
        )
        described: DescribedGroup = response.groups[0]
        self._group_check(group, described.error_code, f"describing group {group!r}")
        return described

    async def describe_consumer_group(self, group: str) -> DescribedConsumerGroup | None:
        """The group as a consumer group (KIP-848), or None when it is not one
        (a classic group, no such group, or a broker without ConsumerGroupDescribe)."""
        conn = await self.coordinator(group)
        if apis.CONSUMER_GROUP_DESCRIBE not in conn.versions:
            return None
        response = await conn.send(
            ConsumerGroupDescribeRequest(
                group_ids=(GroupId(group),), include_authorized_operations=False
            ),
            version=conn.version_for(apis.CONSUMER_GROUP_DESCRIBE, 0, 1),
        )
        described: DescribedConsumerGroup = response.groups[0]
        if described.error_code == ErrorCode.group_id_not_found:
            return None
        self._group_check(group, described.error_code, f"describing group {group!r}")
        return described

    async def committed(self, group: str) -> dict[TopicPartition, int]:
        """Every committed offset of the group."""
        conn = await self.coordinator(group)
        response = await conn.send(
            OffsetFetchRequest(
                groups=(
                    OffsetFetchRequestGroup(
                        group_id=GroupId(group), member_id=None, member_epoch=i32(-1), topics=None
                    ),
                ),
                require_stable=False,
            ),
            version=conn.version_for(apis.OFFSET_FETCH, 8, 9),
        )
        result = response.groups[0]
        self._group_check(group, result.error_code, f"fetching offsets of group {group!r}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in result.topics
            for p in t.partitions
            if p.committed_offset >= 0
        }

    async def log_offsets(
        self, topic: str, partitions: Iterable[int], timestamp: int
    ) -> dict[int, int]:
        """Offsets of `topic`'s partitions at `timestamp` (-1 latest, -2 earliest);
        a timestamp after the last record answers the log end offset."""
        wanted = sorted(partitions)
        conn = await self.cluster.leader(topic, wanted[0])
        response = await conn.send(
            ListOffsetsRequest(
                replica_id=BrokerId(-1),
                isolation_level=i8(0),
                topics=(
                    ListOffsetsTopic(
                        name=TopicName(topic),
                        partitions=tuple(
                            ListOffsetsPartition(
                                partition_index=i32(p),
                                current_leader_epoch=i32(-1),
                                timestamp=i64(timestamp),
                            )
                            for p in wanted
                        ),
                    ),
                ),
            ),
            version=conn.version_for(apis.LIST_OFFSETS, 1, 7),
        )
        out: dict[int, int] = {}
        for t in response.topics:
            for p in t.partitions:
                _check(p.error_code, f"listing offsets of {topic}-{p.partition_index}")
                out[p.partition_index] = p.offset
        if timestamp >= 0 and any(o < 0 for o in out.values()):
            latest = await self.log_offsets(topic, wanted, LATEST)
            out = {p: o if o >= 0 else latest[p] for p, o in out.items()}
        return out

    async def create_partitions(
        self, counts: Mapping[str, int], *, validate_only: bool = False
    ) -> dict[str, KafkaError | None]:
        """Grow each topic to its partition count (CreatePartitions); per topic
        None when done (or valid, with ``validate_only``), else the error."""
        return await create_partitions(self.cluster, counts, validate_only=validate_only)

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        """Delete the records before each partition's offset (-1: all of them,
        up to the high watermark) with DeleteRecords to each leader; per
        partition its new low watermark (log start), else the error."""
        return await delete_records(self.cluster, offsets)

    async def incremental_alter_configs(
        self, changes: Mapping[Resource, Sequence[Op]], *, validate_only: bool = False
    ) -> dict[Resource, KafkaError | None]:
        """Apply each resource's (key, SET/DELETE/APPEND/SUBTRACT, value)
        operations (IncrementalAlterConfigs); per resource None when done (or
        valid, with ``validate_only``), else the error."""
        return await incremental_alter_configs(self.cluster, changes, validate_only=validate_only)

    async def describe_configs(
        self, resource: Resource, *, synonyms: bool = False
    ) -> list[ConfigEntry]:
        """The configs of a (type, name) resource, as DescribeConfigs reports them."""
        return await describe_configs(self.cluster, resource, synonyms=synonyms)

    async def describe_client_quotas(
        self, components: Sequence[Filter] = (), *, strict: bool = False
    ) -> list[QuotaEntry]:
        """The client quotas of the entities matching every (entity type,
        MATCH_EXACT/MATCH_DEFAULT/MATCH_ANY, name) component; with ``strict``,
        of those entities with no other type (DescribeClientQuotas)."""
        return await describe_client_quotas(self.cluster, components, strict=strict)

    async def alter_client_quotas(
        self, changes: Mapping[QuotaEntity, Sequence[Change]], *, validate_only: bool = False
    ) -> dict[QuotaEntity, KafkaError | None]:
        """Set each entity's (key, value) quotas, or remove them (value None),
        with AlterClientQuotas; per entity None when done, else the error."""
        return await alter_client_quotas(self.cluster, changes, validate_only=validate_only)

    async def list_client_metrics_resources(self) -> list[str]:
        """The names of the client metrics subscriptions (KIP-714)."""
        return await list_client_metrics_resources(self.cluster)

    async def describe_log_dirs(
        self,
        brokers: Iterable[int] | None = None,
        partitions: Mapping[str, Iterable[int]] | None = None,
    ) -> dict[int, list[LogDirDescription] | KafkaError]:
        """Each broker's log directories (all brokers by default) with the
        size of the partitions asked for (None: all of them), or its error."""
        return await describe_log_dirs(self.cluster, brokers, partitions)

    async def describe_producers(
        self, partitions: Iterable[TopicPartition], broker: int | None = None
    ) -> dict[TopicPartition, list[ProducerState] | KafkaError]:
        """The active producers of each partition, asked of its leader (or of
        ``broker``), or the error."""
        return await describe_producers(self.cluster, partitions, broker)

    async def commit(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        """A standalone commit (no generation, no member), as admin tools do."""
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        conn = await self.coordinator(group)
        response = await conn.send(
            OffsetCommitRequest(
                group_id=GroupId(group),
                generation_id_or_member_epoch=i32(-1),
                member_id="",
                group_instance_id=None,
                topics=tuple(
                    OffsetCommitRequestTopic(
                        name=TopicName(topic),
                        partitions=tuple(
                            OffsetCommitRequestPartition(
                                partition_index=i32(p),
                                committed_offset=i64(o),
                                committed_leader_epoch=i32(-1),
                                committed_metadata="",
                            )
                            for p, o in parts
                        ),
                    )
                    for topic, parts in by_topic.items()
                ),
            ),
            version=conn.version_for(apis.OFFSET_COMMIT, 2, 9),
        )
        for t in response.topics:
            for p in t.partitions:
                self._group_check(
                    group, p.error_code, f"committing {t.name}-{p.partition_index} for {group!r}"
                )

    async def delete_group(self, group: str) -> None:
        conn = await self.coordinator(group)
        response = await conn.send(
            DeleteGroupsRequest(groups_names=(GroupId(group),)),
            version=conn.version_for(apis.DELETE_GROUPS, 0, 2),
        )
        self._group_check(group, response.results[0].error_code, f"deleting group {group!r}")

    async def delete_offsets(self, group: str, topic: str, partitions: Iterable[int]) -> None:
        conn = await self.coordinator(group)
        response = await conn.send(
            OffsetDeleteRequest(
                group_id=GroupId(group),
                topics=(
                    OffsetDeleteRequestTopic(
                        name=TopicName(topic),
                        partitions=tuple(
                            OffsetDeleteRequestPartition(partition_index=i32(p))
                            for p in sorted(partitions)
                        ),
                    ),
                ),
            ),
            version=conn.version_for(apis.OFFSET_DELETE, 0, 0),
        )
        self._group_check(group, response.error_code, f"deleting offsets of group {group!r}")
        for t in response.topics:
            for p in t.partitions:
                self._group_check(
                    group, p.error_code, f"deleting the offset of {t.name}-{p.partition_index}"
                )

    # -- share groups (KIP-932) ----------------------------------------------------

    async def describe_share_group(self, group: str) -> DescribedShareGroup:
        conn = await self.coordinator(group)
        return await self._at_coordinator(group, describe_share_group(conn, group))

    async def describe_share_group_offsets(self, group: str) -> list[ShareOffset]:
        conn = await self.coordinator(group)
        return await self._at_coordinator(group, describe_share_group_offsets(conn, group))

    async def alter_share_group_offsets(
        self, group: str, offsets: Mapping[TopicPartition, int]
    ) -> None:
        conn = await self.coordinator(group)
        await self._at_coordinator(group, alter_share_group_offsets(conn, group, offsets))

    async def delete_share_group_offsets(
        self, group: str, topics: list[str]
    ) -> dict[str, KafkaError | None]:
        conn = await self.coordinator(group)
        return await self._at_coordinator(group, delete_share_group_offsets(conn, group, topics))

    async def _at_coordinator(self, group: str, call: Awaitable[T]) -> T:
        """Await a call to the group's coordinator; forget the coordinator if it moved."""
        try:
            return await call
        except KafkaError as e:
            if e.error_code in _COORDINATOR_MOVED:
                self._coordinators.pop(group, None)
            raise
