"""The client's view of a cluster: bootstrap, metadata, one connection per broker."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.types import TopicName

from kgroups.client.connection import BrokerConnection
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.errors import ErrorCode, KafkaError


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    out = []
    for item in servers.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        out.append((host.strip("[]") or "localhost", int(port)))
    return out


@dataclass(slots=True)
class TopicInfo:
    name: str
    partitions: dict[int, int]  # partition -> leader node id
    internal: bool = False
    error: ErrorCode = ErrorCode.none
    topic_id: uuid.UUID | None = None


@dataclass(slots=True)
class ClusterMetadata:
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1


class ClusterClient:
    def __init__(
        self, bootstrap: str, client_id: str = "kgroups", security: ClientSecurity = PLAINTEXT
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.security = security
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        self._lock = asyncio.Lock()
        self._bootstrap_lock = asyncio.Lock()
        self.metadata = ClusterMetadata()

    async def any_connection(self) -> BrokerConnection:
        if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
            return self._bootstrap_conn
        # Callers racing here share one connection rather than each opening one.
        async with self._bootstrap_lock:
            if self._bootstrap_conn is not None and not self._bootstrap_conn.closed:
                return self._bootstrap_conn
            errors = []
            for host, port in self._bootstrap:
                try:
                    self._bootstrap_conn = await BrokerConnection.open(
                        host, port, client_id=self.client_id, security=self.security
                    )
                    return self._bootstrap_conn
                except (OSError, TimeoutError) as e:
                    errors.append(f"{host}:{port}: {e}")
            raise ConnectionError("no bootstrap server reachable (" + "; ".join(errors) + ")")

    async def connection(self, node_id: int) -> BrokerConnection:
        async with self._lock:
            conn = self._connections.get(node_id)
            if conn is None or conn.closed:
                # A broker that went away is reached again once it is back.
                if node_id not in self.metadata.brokers:
                    await self._refresh_unlocked(None)
                host, port = self.metadata.brokers[node_id]
                conn = self._connections[node_id] = await BrokerConnection.open(
                    host, port, client_id=self.client_id, security=self.security
                )
            return conn

    async def refresh(self, topics: list[str] | None = None, auto_create: bool = False) -> None:
        async with self._lock:
            await self._refresh_unlocked(topics, auto_create)

    async def _refresh_unlocked(self, topics: list[str] | None, auto_create: bool = False) -> None:
        conn = await self.any_connection()
        request = MetadataRequest(
            topics=None
            if topics is None
            else tuple(MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics),
            allow_auto_topic_creation=auto_create,
            include_topic_authorized_operations=False,
        )
        response = await conn.send(request)
        md = self.metadata
        md.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        md.cluster_id = response.cluster_id
        md.controller_id = response.controller_id
        if topics is None:
            md.topics = {}
        for t in response.topics:
            if t.name is None:
                continue
            md.topics[t.name] = TopicInfo(
                name=t.name,
                partitions={p.partition_index: p.leader_id for p in t.partitions},
                internal=t.is_internal,
                error=t.error_code,
                topic_id=t.topic_id if t.topic_id is not None and t.topic_id.int else None,
            )

    async def topic(self, name: str) -> TopicInfo:
        await self.refresh([name])
        info = self.metadata.topics.get(name)
        if info is None or info.error != ErrorCode.none:
            raise KafkaError(
                info.error if info else ErrorCode.unknown_topic_or_partition,
                f"topic {name!r} does not exist",
            )
        return info

    async def leader(self, topic: str, partition: int) -> BrokerConnection:
        info = self.metadata.topics.get(topic) or await self.topic(topic)
        node = info.partitions.get(partition)
        if node is None or node < 0:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"{topic}-{partition}")
        return await self.connection(node)

    async def controller(self) -> BrokerConnection:
        if self.metadata.controller_id < 0:
            await self.refresh([])
        if self.metadata.controller_id < 0:
            return await self.any_connection()
        return await self.connection(self.metadata.controller_id)

    def address(self, node_id: int) -> tuple[str, int] | None:
        return self.metadata.brokers.get(node_id)

    def leader_id(self, topic: str, partition: int) -> int | None:
        """The leader's node id as last seen in metadata; None when unknown."""
        info = self.metadata.topics.get(topic)
        if info is None:
            return None
        node = info.partitions.get(partition)
        return node if node is not None and node >= 0 else None

    async def close(self) -> None:
        conns = list(self._connections.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        self._connections.clear()
        self._bootstrap_conn = None
        for conn in conns:
            await conn.close()
