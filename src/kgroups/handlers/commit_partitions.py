"""OffsetCommit's unknown partitions are answered before the coordinator is asked.

As in Kafka (whose request handler does the same), partitions of unknown topics,
or beyond a topic's partition count, get UNKNOWN_TOPIC_OR_PARTITION from the
handler, and the coordinator sees only the others. So a huge request naming
hundreds of thousands of partitions costs the coordinator only the partitions
that exist, and the handler's own pass gives the event loop a turn every
``SLICE`` partitions.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

from kio.schema.offset_commit.v9 import OffsetCommitRequest, OffsetCommitResponse
from kio.schema.offset_commit.v9.request import OffsetCommitRequestTopic
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

from kgroups.errors import ErrorCode

if TYPE_CHECKING:
    from kgroups.partitions.topic_registry import TopicRegistry

__all__ = ["merge_unknown", "split_unknown"]

# Partitions handled between two turns of the event loop.
SLICE = 10_000


async def split_unknown(
    topics: TopicRegistry, request: OffsetCommitRequest
) -> tuple[OffsetCommitRequest, tuple[OffsetCommitResponseTopic, ...]]:
    """The request cut down to existing partitions, and the answers for the others."""
    known: list[OffsetCommitRequestTopic] = []
    unknown: list[OffsetCommitResponseTopic] = []
    since_turn = 0
    for topic in request.topics:
        found = topics.get(topic.name)
        count = 0 if found is None else found.partitions
        present = [p for p in topic.partitions if 0 <= p.partition_index < count]
        if len(present) == len(topic.partitions):
            known.append(topic)
        else:
            if present:
                known.append(dataclasses.replace(topic, partitions=tuple(present)))
            unknown.append(
                OffsetCommitResponseTopic(
                    name=topic.name,
                    partitions=tuple(
                        OffsetCommitResponsePartition(
                            partition_index=p.partition_index,
                            error_code=ErrorCode.unknown_topic_or_partition,
                        )
                        for p in topic.partitions
                        if not 0 <= p.partition_index < count
                    ),
                )
            )
        since_turn += len(topic.partitions)
        if since_turn >= SLICE:
            since_turn = 0
            await asyncio.sleep(0)
    if not unknown:
        return request, ()
    return dataclasses.replace(request, topics=tuple(known)), tuple(unknown)


def merge_unknown(
    response: OffsetCommitResponse, unknown: tuple[OffsetCommitResponseTopic, ...]
) -> OffsetCommitResponse:
    """``response`` with the unknown partitions' answers added, by topic."""
    if not unknown:
        return response
    by_name = {t.name: t for t in response.topics}
    for topic in unknown:
        other = by_name.get(topic.name)
        by_name[topic.name] = (
            topic
            if other is None
            else dataclasses.replace(other, partitions=other.partitions + topic.partitions)
        )
    return dataclasses.replace(response, topics=tuple(by_name.values()))
