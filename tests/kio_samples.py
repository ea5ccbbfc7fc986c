"""Instances of any kio entity, built from its schema: every field set, arrays of
two elements, and on request one nullable field (by path) set to null."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

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
    for field in dataclasses.fields(entity_type):
        if get_field_tag(field) is not None:
            continue  # tagged fields keep their defaults
        here = null_at[:1] == (field.name,)
        if here and len(null_at) == 1:
            values[field.name] = None
            continue
        deeper = null_at[1:] if here else ()
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            values[field.name] = (sample(kind.type_, deeper), sample(kind.type_))
        elif isinstance(kind, EntityField):
            values[field.name] = sample(kind.type_, deeper)
        else:
            value = _VALUES[get_schema_field_type(field)]
            is_tuple = isinstance(kind, PrimitiveTupleField)
            values[field.name] = (value, value) if is_tuple else value
    return entity_type(**values)


def nullable_paths(entity_type: type[Any], prefix: Path = ()) -> Iterator[Path]:
    """Every field that may be null, by path; nested ones inside the first element."""
    for field in dataclasses.fields(entity_type):
        if get_field_tag(field) is not None:
            continue
        path = (*prefix, field.name)
        if is_optional(field):
            yield path
        kind = classify_field(field)
        if isinstance(kind, EntityField | EntityTupleField):
            yield from nullable_paths(kind.type_, path)


def encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()
