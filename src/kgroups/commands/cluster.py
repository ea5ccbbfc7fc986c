"""`kgroups cluster describe`: brokers, the leader of each partition, and which
broker coordinates which group, all asked over the wire (Metadata,
DescribeCluster, ListGroups on every broker, FindCoordinator), so it works
against one broker or a cluster alike."""

from __future__ import annotations

import json
from typing import Any

from kio.schema.describe_cluster.v0 import DescribeClusterRequest
from kio.schema.metadata.v12 import MetadataRequest

from kgroups.client.admin import Admin
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.commands.groups import table
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis


async def describe(bootstrap: str, output: str, security: ClientSecurity = PLAINTEXT) -> str:
    admin = Admin(bootstrap, security=security)
    try:
        conn = await admin.cluster.any_connection()
        described = await conn.send(
            DescribeClusterRequest(include_cluster_authorized_operations=False),
            version=conn.version_for(apis.DESCRIBE_CLUSTER, 0, 0),
        )
        if described.error_code != ErrorCode.none:
            raise KafkaError(described.error_code, described.error_message)
        metadata = await conn.send(
            MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        listed = await admin.list_groups()
        coordinators = await admin.find_coordinators(g.group_id for g in listed)
    finally:
        await admin.close()
    brokers = [
        {"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in sorted(described.brokers, key=lambda b: b.broker_id)
    ]
    partitions = [
        {
            "topic": t.name,
            "partition": p.partition_index,
            "leader": p.leader_id,
            "leader_epoch": p.leader_epoch,
        }
        for t in sorted(metadata.topics, key=lambda t: t.name or "")
        for p in sorted(t.partitions, key=lambda p: p.partition_index)
    ]
    groups: list[dict[str, Any]] = []
    for g in listed:
        found = coordinators.get(g.group_id)
        coordinator = None
        if isinstance(found, tuple):
            node, host, port = found
            coordinator = {"broker_id": node, "host": host, "port": port}
        groups.append({"group": g.group_id, "state": g.group_state, "coordinator": coordinator})
    if output == "json":
        return json.dumps(
            {
                "cluster_id": described.cluster_id,
                "controller_id": described.controller_id,
                "brokers": brokers,
                "partitions": partitions,
                "groups": groups,
            }
        )
    parts = [
        f"Cluster {described.cluster_id}: {len(brokers)} broker(s), "
        f"controller {described.controller_id}",
        table(
            ("BROKER", "HOST:PORT", "RACK"),
            [(b["broker_id"], f"{b['host']}:{b['port']}", b["rack"] or "-") for b in brokers],
        ),
    ]
    if partitions:
        parts.append(
            table(
                ("TOPIC", "PARTITION", "LEADER", "LEADER-EPOCH"),
                [(p["topic"], p["partition"], p["leader"], p["leader_epoch"]) for p in partitions],
            )
        )
    if groups:
        parts.append(
            table(
                ("GROUP", "STATE", "COORDINATOR", "HOST:PORT"),
                [
                    (
                        g["group"],
                        g["state"],
                        "-" if g["coordinator"] is None else g["coordinator"]["broker_id"],
                        "-"
                        if g["coordinator"] is None
                        else f"{g['coordinator']['host']}:{g['coordinator']['port']}",
                    )
                    for g in groups
                ],
            )
        )
    return "\n\n".join(parts)
