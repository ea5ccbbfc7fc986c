"""OffsetCommit requests of any version, encoded by kio: what the coordinator
tests of the hand-written reader and of the connection's fast path send."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from kio.index import load_request_schema

from kgroups.protocol.types import GroupId, TopicName, i32, i64

from raw_wire import encode_request

OFFSET_COMMIT = 8
VERSIONS = range(2, 10)


def _nested(request_type: Any, field_name: str) -> Any:
    """The entity type of a tuple field (kio names it in the annotation)."""
    module = __import__(request_type.__module__, fromlist=["_"])
    name = {"topics": "OffsetCommitRequestTopic", "partitions": "OffsetCommitRequestPartition"}
    return getattr(module, name[field_name])


def commit_request(
    version: int,
    group: str,
    topics: dict[str, list[int]],
    *,
    generation: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    offset: int = 42,
    leader_epoch: int = 3,
    metadata: str | None = "",
    retention_ms: int = -1,
) -> Any:
    """A kio OffsetCommit request of ``version``; fields the version lacks are left out."""
    request_type = load_request_schema(OFFSET_COMMIT, version)
    topic_type = _nested(request_type, "topics")
    partition_type = _nested(request_type, "partitions")
    partition_fields = {f.name for f in dataclasses.fields(partition_type)}
    request_fields = {f.name for f in dataclasses.fields(request_type)}

    def partition(index: int) -> Any:
        values: dict[str, Any] = {
            "partition_index": i32(index),
            "committed_offset": i64(offset + index),
            "committed_metadata": metadata,
        }
        if "committed_leader_epoch" in partition_fields:
            values["committed_leader_epoch"] = i32(leader_epoch)
        return partition_type(**values)

    values: dict[str, Any] = {
        "group_id": GroupId(group),
        "generation_id_or_member_epoch": i32(generation),
        "member_id": member_id,
        "topics": tuple(
            topic_type(name=TopicName(name), partitions=tuple(partition(p) for p in parts))
            for name, parts in topics.items()
        ),
    }
    if "group_instance_id" in request_fields:
        values["group_instance_id"] = instance_id
    if "retention_time" in request_fields:
        values["retention_time"] = datetime.timedelta(milliseconds=retention_ms)
    return request_type(**values)


def commit_frame(version: int, group: str, topics: dict[str, list[int]], **fields: Any) -> bytes:
    """``commit_request`` framed, without its size prefix (as a connection hands it on)."""
    return encode_request(commit_request(version, group, topics, **fields), correlation=77)[4:]
