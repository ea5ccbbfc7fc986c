"""`kgroups consume TOPIC`: read partitions directly (no consumer group)."""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from typing import TextIO

from kio.schema.fetch.v12 import FetchRequest
from kio.static.primitive import i32Timedelta

from kgroups.client.admin import EARLIEST, LATEST, Admin
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.fetch_request import fetch_request
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.commands.open_topic import open_topic
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.apis import FETCH
from kgroups.records.batch import decode_records, iter_batches

_CLIENT_ID = "kgroups-consumer"
_MAX_WAIT = i32Timedelta.parse(timedelta(milliseconds=500))


async def run(
    bootstrap: str,
    topic: str,
    *,
    partition: int | None,
    from_beginning: bool,
    max_messages: int | None,
    timeout_ms: int | None,
    print_key: bool,
    out: TextIO | None = None,
    security: ClientSecurity = PLAINTEXT,
) -> int:
    out = sys.stdout if out is None else out  # read now: tests and embedders swap it
    async with open_topic(bootstrap, _CLIENT_ID, security, topic, partition) as (client, info):
        partitions = [partition] if partition is not None else sorted(info.partitions)
        conn = await client.leader(topic, partitions[0])
        positions = await Admin(bootstrap, client).log_offsets(
            topic, partitions, EARLIEST if from_beginning else LATEST
        )
        seen = 0
        idle_since = time.monotonic()
        fetch_version = conn.version_for(FETCH, 4, 12)
        while max_messages is None or seen < max_messages:
            response = await conn.send(_fetch_request(topic, positions), version=fetch_version)
            got = 0
            for t in response.responses:
                for p in t.partitions:
                    if p.error_code != ErrorCode.none:
                        raise KafkaError(p.error_code, f"fetch from {topic}-{p.partition_index}")
                    data = p.records or b""
                    for pos, header in iter_batches(data):
                        for record in decode_records(data[pos : pos + header.size]):
                            if record.offset < positions[p.partition_index]:
                                continue
                            positions[p.partition_index] = record.offset + 1
                            value = (record.value or b"").decode("utf-8", "replace")
                            if print_key:
                                key = (record.key or b"").decode("utf-8", "replace")
                                value = f"{key}\t{value}"
                            out.write(value + "\n")
                            seen += 1
                            got += 1
                            if max_messages is not None and seen >= max_messages:
                                break
            out.flush()
            if got:
                idle_since = time.monotonic()
            elif timeout_ms is not None and (time.monotonic() - idle_since) * 1000 >= timeout_ms:
                break
    return seen


def _fetch_request(topic: str, positions: dict[int, int]) -> FetchRequest:
    return fetch_request(
        {TopicPartition(topic, p): o for p, o in positions.items()},
        max_wait=_MAX_WAIT,
        min_bytes=1,
        max_bytes=52428800,
        partition_max_bytes=1048576,
    )
