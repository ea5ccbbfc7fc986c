"""`kgroups topics create|list|describe|alter|delete`."""

from __future__ import annotations

import argparse
import json

from kgroups.client.admin import EARLIEST, LATEST, Admin
from kgroups.client.cluster import ClusterClient
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.client.topic_admin import create, delete
from kgroups.commands.usage import UsageError
from kgroups.errors import ErrorCode

__all__ = ["alter", "create", "delete", "describe", "list_topics", "run"]


async def run(args: argparse.Namespace, security: ClientSecurity) -> str:
    """The action the command line names."""
    bootstrap, action = args.bootstrap_server, args.action
    if action == "create":
        return await create(bootstrap, args.name, args.partitions, args.config, security)
    if action == "list":
        return await list_topics(bootstrap, args.include_internal, security)
    if action == "describe":
        return await describe(bootstrap, args.names, security)
    if action == "alter":
        return await alter(bootstrap, args.topic, args.partitions, args.output, security)
    return await delete(bootstrap, args.name, security)


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


async def alter(
    bootstrap: str, name: str, partitions: int, output: str, security: ClientSecurity = PLAINTEXT
) -> str:
    """Add partitions to a topic, as kafka-topics.sh --alter --partitions (CreatePartitions)."""
    if partitions < 1:
        raise UsageError(f"--partitions must be at least 1, not {partitions}")
    admin = Admin(bootstrap, security=security)
    try:
        error = (await admin.create_partitions({name: partitions}))[name]
    finally:
        await admin.close()
    if error is not None:
        raise error
    if output == "json":
        return json.dumps({"topic": name, "partitions": partitions})
    return f"Topic {name} now has {partitions} partition(s)."
