"""CreatePartitions and DeleteRecords as raw requests of a chosen version,
for tests of what a broker alone or a cluster member answers."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i32, i64

from raw_wire import call_once

TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))


def _schema(api: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{api}.v{version}.request")


def create_partitions(
    port: int,
    counts: Mapping[str, int] | Sequence[tuple[str, int]],
    *,
    assignments: Mapping[str, list[list[int]]] | None = None,
    validate_only: bool = False,
    version: int = 3,
) -> list[tuple[str, ErrorCode, str | None]]:
    """(topic, error, message) for each topic of one CreatePartitions."""
    schema = _schema("create_partitions", version)
    pairs = counts.items() if isinstance(counts, Mapping) else counts
    wanted = (assignments or {}).copy()
    request = schema.CreatePartitionsRequest(
        topics=tuple(
            schema.CreatePartitionsTopic(
                name=name,
                count=i32(count),
                assignments=None
                if name not in wanted
                else tuple(
                    schema.CreatePartitionsAssignment(broker_ids=tuple(i32(b) for b in ids))
                    for ids in wanted[name]
                ),
            )
            for name, count in pairs
        ),
        timeout=TIMEOUT,
        validate_only=validate_only,
    )
    response = call_once(port, request, timeout=30)
    return [(r.name, ErrorCode(r.error_code), r.error_message) for r in response.results]


def delete_records(
    port: int, offsets: Mapping[tuple[str, int], int], *, version: int = 2
) -> dict[tuple[str, int], tuple[ErrorCode, int]]:
    """(error, low watermark) of each partition of one DeleteRecords."""
    schema = _schema("delete_records", version)
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append((partition, offset))
    request = schema.DeleteRecordsRequest(
        topics=tuple(
            schema.DeleteRecordsTopic(
                name=topic,
                partitions=tuple(
                    schema.DeleteRecordsPartition(partition_index=i32(p), offset=i64(o))
                    for p, o in parts
                ),
            )
            for topic, parts in by_topic.items()
        ),
        timeout=TIMEOUT,
    )
    response = call_once(port, request, timeout=30)
    return {
        (t.name, p.partition_index): (ErrorCode(p.error_code), p.low_watermark)
        for t in response.topics
        for p in t.partitions
    }
