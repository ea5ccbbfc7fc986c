"""`kgroups topics create|list|describe|delete`."""

from __future__ import annotations

from kgroups.client.admin import EARLIEST, LATEST, Admin
from kgroups.client.cluster import ClusterClient
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.client.topic_admin import create, delete
from kgroups.errors import ErrorCode

__all__ = ["create", "delete", "describe", "list_topics"]


async def list_topics(
    bootstrap: str, include_internal: bool, security: ClientSecurity = PLAINTEXT
) -> str:
    client = ClusterClient(bootstrap, "kgroups-cli", security)
    try:
        await client.refresh(None)
        names = sorted(
            t.name for t in client.metadata.topics.values() if include_internal or not t.internal
        )
        return "\n".join(names)
    finally:
        await client.close()


async def describe(bootstrap: str, names: list[str], security: ClientSecurity = PLAINTEXT) -> str:
    admin = Admin(bootstrap, security=security)
    client = admin.cluster
    try:
        await client.refresh(names or None)
        topics = [client.metadata.topics[n] for n in sorted(client.metadata.topics)]
        lines = []
        for topic in topics:
            if topic.error != ErrorCode.none:
                lines.append(f"Topic: {topic.name}\tError: {topic.error.name.upper()}")
                continue
            earliest = await admin.log_offsets(topic.name, topic.partitions, EARLIEST)
            latest = await admin.log_offsets(topic.name, topic.partitions, LATEST)
            internal = "\tInternal: true" if topic.internal else ""
            lines.append(f"Topic: {topic.name}\tPartitions: {len(topic.partitions)}{internal}")
            for p in sorted(topic.partitions):
                lines.append(
                    f"\tPartition: {p}\tLeader: {topic.partitions[p]}"
                    f"\tStart offset: {earliest.get(p, -1)}\tEnd offset: {latest.get(p, -1)}"
                )
        return "\n".join(lines)
    finally:
        await admin.close()
