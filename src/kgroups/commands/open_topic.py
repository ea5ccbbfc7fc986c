"""The client of a command that reads or writes one topic (``kgroups consume``,
``kgroups produce``): connected, the topic looked up and the partition asked
for checked, and closed when the command is done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kgroups.client.cluster import ClusterClient, TopicInfo
from kgroups.client.security import ClientSecurity
from kgroups.errors import ErrorCode, KafkaError


@asynccontextmanager
async def open_topic(
    bootstrap: str, client_id: str, security: ClientSecurity, topic: str, partition: int | None
) -> AsyncIterator[tuple[ClusterClient, TopicInfo]]:
    """The client and the topic's metadata; UNKNOWN_TOPIC_OR_PARTITION if the
    topic lacks ``partition``."""
    client = ClusterClient(bootstrap, client_id, security)
    try:
        info = await client.topic(topic)
        if partition is not None and partition not in info.partitions:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"topic {topic} has no partition {partition}"
            )
        yield client, info
    finally:
        await client.close()
