"""`kgroups produce TOPIC`: one record per line of standard input."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict
from datetime import timedelta
from typing import TextIO, cast

from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records, i32Timedelta

from kgroups.client.cluster import ClusterClient
from kgroups.client.partitioner import partition_for_key
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.commands.open_topic import open_topic
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.apis import PRODUCE
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch

_CLIENT_ID = "kgroups-producer"
_BATCH = 500
_TIMEOUT = i32Timedelta.parse(timedelta(seconds=30))
_ATTEMPTS = 10
_BACKOFF_S = 0.1
# Refusals that mean the records were not written: safe to send again.
_UNWRITTEN = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.leader_not_available,
    }
)

Pending = dict[int, list[tuple[bytes | None, bytes | None, tuple[()], int]]]


async def run(
    bootstrap: str,
    topic: str,
    key_separator: str | None,
    partition: int | None,
    acks: int,
    source: TextIO | None = None,
    security: ClientSecurity = PLAINTEXT,
) -> int:
    source = sys.stdin if source is None else source  # read now: tests and embedders swap it
    async with open_topic(bootstrap, _CLIENT_ID, security, topic, partition) as (client, info):
        count = len(info.partitions)
        pending: Pending = defaultdict(list)
        next_partition = 0
        sent = 0
        for line in source:
            text = line.rstrip("\n")
            key: bytes | None = None
            value = text
            if key_separator is not None and key_separator in text:
                k, value = text.split(key_separator, 1)
                key = k.encode()
            if partition is not None:
                target = partition
            elif key is not None:
                target = partition_for_key(key, count)
            else:
                target, next_partition = next_partition, (next_partition + 1) % count
            pending[target].append((key, value.encode(), (), int(time.time() * 1000)))
            if len(pending[target]) >= _BATCH:
                sent += await _send(client, topic, {target: pending.pop(target)}, acks)
        sent += await _send(client, topic, pending, acks)
    return sent


async def _send(client: ClusterClient, topic: str, pending: Pending, acks: int) -> int:
    """Each partition's records to its own leader, one request per leader. A
    partition refused for an error that means nothing was written (its leader
    moved, or has not heard of a topic just created) is sent again, to the
    leader fresh metadata names."""
    sent = 0
    for attempt in range(_ATTEMPTS):
        by_leader: dict[int | None, Pending] = defaultdict(dict)
        for p, records in pending.items():
            by_leader[client.leader_id(topic, p)][p] = records
        refused: dict[int, KafkaError] = {}
        for part in by_leader.values():
            refused |= await _send_to_leader(client, topic, part, acks)
        sent += sum(len(r) for p, r in pending.items() if p not in refused)
        if not refused:
            return sent
        if attempt + 1 == _ATTEMPTS or any(
            e.error_code not in _UNWRITTEN for e in refused.values()
        ):
            raise next(iter(refused.values()))
        pending = {p: pending[p] for p in refused}
        await asyncio.sleep(_BACKOFF_S * (attempt + 1))
        await client.refresh([topic])
    return sent


async def _send_to_leader(
    client: ClusterClient, topic: str, pending: Pending, acks: int
) -> dict[int, KafkaError]:
    """The partitions the leader refused, with its error."""
    conn = await client.leader(topic, next(iter(pending)))
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(acks),
        timeout=_TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=tuple(
                    PartitionProduceData(index=i32(p), records=cast(Records, encode_batch(records)))
                    for p, records in pending.items()
                ),
            ),
        ),
    )
    version = conn.version_for(PRODUCE, 3, 9)
    response = await conn.send(request, version=version, expect_response=acks != 0)
    refused: dict[int, KafkaError] = {}
    if response is not None:
        for t in response.responses:
            for p in t.partition_responses:
                if p.error_code != ErrorCode.none:
                    refused[int(p.index)] = KafkaError(p.error_code, p.error_message)
    return refused
