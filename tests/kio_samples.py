"""Instances of any kio entity, built from its schema: every field set, arrays of
two elements, and on request one nullable field (by path) set to null."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from kgroups.protocol.kio_schema import schema_fields

_VALUES: dict[str, object] = {
    "int8": 1,
    "int16": 1,
    "int32": 1,
    "int64": 1,
    "uint8": 1,
    "uint16": 1,
    "uint32": 1,
    "uint64": 1,
    "float64": 1.0,
    "bool": False,
    "error_code": ErrorCode.none,
    "uuid": UUID(int=1),
    "timedelta_i32": timedelta(milliseconds=1),
    "timedelta_i64": timedelta(milliseconds=1),
    "datetime_i64": datetime(2024, 1, 1, tzinfo=UTC),
    "string": "s",
    "bytes": b"b",
    "records": b"r",
}

Path = tuple[str, ...]


def sample(entity_type: type[Any], null_at: Path = ()) -> Any:
    """An instance with the field at `null_at` (names from the root) set to None."""
    values: dict[str, object] = {}
    for field in schema_fields(entity_type):
        if field.tag is not None:
            continue  # tagged fields keep their defaults
        here = null_at[:1] == (field.name,)
        if here and len(null_at) == 1:
            values[field.name] = None
            continue
        deeper = null_at[1:] if here else ()
        if field.entity is not None and field.array:
            values[field.name] = (sample(field.entity, deeper), sample(field.entity))
        elif field.entity is not None:
            values[field.name] = sample(field.entity, deeper)
        else:
            value = _VALUES[field.kafka_type or ""]
            values[field.name] = (value, value) if field.array else value
    return entity_type(**values)


def nullable_paths(entity_type: type[Any], prefix: Path = ()) -> Iterator[Path]:
    """Every field that may be null, by path; nested ones inside the first element."""
    for field in schema_fields(entity_type):
        if field.tag is not None:
            continue
        path = (*prefix, field.name)
        if field.optional:
            yield path
        if field.entity is not None:
            yield from nullable_paths(field.entity, path)


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()
