"""Where API versions differ: the one place that bridges them.

Handlers and the coordinator are written once, against the newest schema; an
older request is copied field by field into the newest class, and fields the
old version lacks take their schema default (or the type's zero when the
schema has none). The way back is mostly free: kio's writer for an older
response version reads fields by name, so a newest-version response object
serialises as any older version.

Where an older version has another shape or another meaning, the rule is
below, once: Metadata v8-v10's cluster operations flag, JoinGroup's protocol
name before v7, LeaveGroup v0-v2 (one
member, one error), OffsetCommit v2-v4 (a retention time), OffsetFetch v1-v7
(one group, flat).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.static.primitive import i32, i32Timedelta

from kgroups.protocol.kio_schema import SchemaField, schema_fields

# The group APIs' schemas are imported by the functions that use them: with the
# first request of their API, not with the broker.
if TYPE_CHECKING:
    from kio.schema.leave_group.v5.request import LeaveGroupRequest
    from kio.schema.leave_group.v5.response import MemberResponse
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
    from kio.schema.offset_fetch.v9.response import OffsetFetchResponseGroup

T = TypeVar("T")

_ZERO_BY_KAFKA_TYPE: dict[str, object] = {
    "string": "",
    "bytes": b"",
    "bool": False,
    "timedelta_i32": timedelta(0),
    "timedelta_i64": timedelta(0),
    "uuid": UUID(int=0),
    "float64": 0.0,
}

Converter = Callable[[Any], Any]


def upgrade(entity: object, target: type[T]) -> T:
    if isinstance(entity, target):
        return entity
    source: Any = type(entity)
    destination: Any = target
    convert = _converter(source, destination)
    result: T = convert(entity)
    return result


@cache
def _converter(source: Any, target: Any) -> Converter:
    source_fields = {f.name: f for f in schema_fields(source)}
    steps: list[tuple[str, Callable[[Any], Any]]] = []
    for f in schema_fields(target):
        old = source_fields.get(f.name)
        if old is not None:
            steps.append((f.name, _field_copier(old, f)))
        else:
            steps.append((f.name, _constant(_default_for(f))))

    def convert(obj: Any) -> Any:
        return target(**{name: step(obj) for name, step in steps})

    return convert


def _constant(value: object) -> Converter:
    return lambda _obj: value


def _field_copier(source: SchemaField, target: SchemaField) -> Converter:
    name = source.name
    if target.entity is None:
        return lambda obj: getattr(obj, name)
    inner = _nested_converter(source, target.entity)
    if target.array:

        def copy_entities(obj: Any) -> Any:
            value = getattr(obj, name)
            return None if value is None else tuple(inner(v) for v in value)

        return copy_entities

    def copy_entity(obj: Any) -> Any:
        value = getattr(obj, name)
        return None if value is None else inner(value)

    return copy_entity


def _nested_converter(source: SchemaField, target_type: Any) -> Converter:
    source_type = source.entity
    assert source_type is not None
    if source_type is target_type:
        return lambda v: v
    return _converter(source_type, target_type)


def _default_for(f: SchemaField) -> object:
    default = f.field.default
    if default is not dataclasses.MISSING:
        return default
    if f.field.default_factory is not dataclasses.MISSING:
        return f.field.default_factory()
    if f.optional:
        return None
    if f.array or f.entity is not None:
        return ()
    return _ZERO_BY_KAFKA_TYPE.get(f.kafka_type or "", 0)


def build(cls: type[T], **values: Any) -> T:
    """An entity of `cls` from the values it has fields for; schema defaults for
    the rest. For responses whose older versions have fields the newest lacks."""
    wanted = {}
    for f in schema_fields(cls):
        wanted[f.name] = values[f.name] if f.name in values else _default_for(f)
    return cls(**wanted)


# -- JoinGroup ----------------------------------------------------------------

# JoinGroup v7 made the protocol name nullable; before, "" stands for none.
_NULLABLE_PROTOCOL_NAME_VERSION = 7


def join_protocol_name(api_version: int, name: str | None) -> str | None:
    """The chosen protocol's name as `api_version` writes "none yet"."""
    if api_version < _NULLABLE_PROTOCOL_NAME_VERSION:
        return name or ""
    return name or None


# -- LeaveGroup ---------------------------------------------------------------

# -- Metadata -----------------------------------------------------------------


def metadata_request(request: Any) -> tuple[MetadataRequest, bool]:
    """Any version's request as the newest, and whether it asks for the
    cluster's authorized operations: a v8-v10 field the newest lacks."""
    asked = bool(getattr(request, "include_cluster_authorized_operations", False))
    return upgrade(request, MetadataRequest), asked


# LeaveGroup v3 introduced batch leaves with per-member errors.
_BATCH_LEAVE_VERSION = 3


def leave_request(api_version: int, request: Any) -> LeaveGroupRequest:
    """Any version's request as the newest: v0-v2 name one member."""
    from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity

    if api_version < _BATCH_LEAVE_VERSION:
        member = MemberIdentity(member_id=request.member_id, group_instance_id=None)
        return LeaveGroupRequest(group_id=request.group_id, members=(member,))
    return upgrade(request, LeaveGroupRequest)


def leave_error(
    api_version: int, error: ErrorCode, members: tuple[MemberResponse, ...]
) -> ErrorCode:
    """The top-level error: before v3 it also carries the member's failure."""
    if api_version < _BATCH_LEAVE_VERSION and error is ErrorCode.none:
        return next(
            (m.error_code for m in members if m.error_code is not ErrorCode.none),
            ErrorCode.none,
        )
    return error


# -- OffsetCommit -------------------------------------------------------------


def commit_retention_ms(request: Any) -> int:
    """v2-v4 carry a retention time that later versions dropped (-1: broker default)."""
    retention: timedelta | None = getattr(request, "retention_time", None)
    return -1 if retention is None else round(retention.total_seconds() * 1000)


# -- OffsetFetch --------------------------------------------------------------

# OffsetFetch v8 fetches for many groups at once.
_GROUP_BATCH_VERSION = 8


def offset_fetch_groups(api_version: int, request: Any) -> tuple[OffsetFetchRequestGroup, ...]:
    """The groups a request of any version asks about; v1-v7 name one."""
    from kio.schema.offset_fetch.v9.request import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopics,
    )

    if api_version >= _GROUP_BATCH_VERSION:
        return upgrade(request, OffsetFetchRequest).groups
    topics = (
        None
        if request.topics is None
        else tuple(
            OffsetFetchRequestTopics(name=t.name, partition_indexes=t.partition_indexes)
            for t in request.topics
        )
    )
    return (
        OffsetFetchRequestGroup(
            group_id=request.group_id, member_id=None, member_epoch=i32(-1), topics=topics
        ),
    )


def offset_fetch_response(api_version: int, groups: tuple[OffsetFetchResponseGroup, ...]) -> Any:
    """The answer in `api_version`'s shape: v1-v7 answer for one group, flat,
    its error repeated in every partition that has none of its own."""
    if api_version >= _GROUP_BATCH_VERSION:
        from kio.schema.offset_fetch.v9.response import OffsetFetchResponse

        return OffsetFetchResponse(throttle_time=_NO_THROTTLE, groups=groups)
    group = groups[0]
    topic_type = _offset_fetch_entity(api_version, "OffsetFetchResponseTopic")
    partition_type = _offset_fetch_entity(api_version, "OffsetFetchResponsePartition")
    return build(
        _offset_fetch_entity(api_version, "OffsetFetchResponse"),
        throttle_time=_NO_THROTTLE,
        error_code=group.error_code,
        topics=tuple(
            build(
                topic_type,
                name=t.name,
                partitions=tuple(
                    build(
                        partition_type,
                        partition_index=p.partition_index,
                        committed_offset=p.committed_offset,
                        committed_leader_epoch=p.committed_leader_epoch,
                        metadata=p.metadata,
                        error_code=p.error_code if p.error_code else group.error_code,
                    )
                    for p in t.partitions
                ),
            )
            for t in group.topics
        ),
    )


_NO_THROTTLE = i32Timedelta.parse(timedelta(0))


def _offset_fetch_entity(version: int, name: str) -> type[Any]:
    module = importlib.import_module(f"kio.schema.offset_fetch.v{version}.response")
    cls: type[Any] = getattr(module, name)
    return cls
