"""Bring a request of any version into the shape of the newest version we serve.

Handlers are written once, against the newest schema; an older request is
copied field by field into the newest class, and fields the old version lacks
take their schema default (or the type's zero when the schema has none). The
way back is free: kio's writer for an older response version reads fields by
name, so a newest-version response object serialises as any older version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from typing import Any, TypeVar
from uuid import UUID

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    classify_field,
    is_optional,
)

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
    source_names = {f.name for f in dataclasses.fields(source)}
    source_fields = {f.name: f for f in dataclasses.fields(source)}
    steps: list[tuple[str, Callable[[Any], Any]]] = []
    for f in dataclasses.fields(target):
        if f.name in source_names:
            steps.append((f.name, _field_copier(source_fields[f.name], f)))
        else:
            steps.append((f.name, _constant(_default_for(f))))

    def convert(obj: Any) -> Any:
        return target(**{name: step(obj) for name, step in steps})

    return convert


def _constant(value: object) -> Converter:
    return lambda _obj: value


def _field_copier(source: dataclasses.Field[Any], target: dataclasses.Field[Any]) -> Converter:
    name = source.name
    kind = classify_field(target)
    if isinstance(kind, EntityField):
        inner = _nested_converter(source, kind.type_)

        def copy_entity(obj: Any) -> Any:
            value = getattr(obj, name)
            return None if value is None else inner(value)

        return copy_entity
    if isinstance(kind, EntityTupleField):
        inner = _nested_converter(source, kind.type_)

        def copy_entities(obj: Any) -> Any:
            value = getattr(obj, name)
            return None if value is None else tuple(inner(v) for v in value)

        return copy_entities
    return lambda obj: getattr(obj, name)


def _nested_converter(source: dataclasses.Field[Any], target_type: Any) -> Converter:
    source_kind = classify_field(source)
    assert isinstance(source_kind, EntityField | EntityTupleField)
    source_type: Any = source_kind.type_
    if source_type is target_type:
        return lambda v: v
    return _converter(source_type, target_type)


def _default_for(f: dataclasses.Field[Any]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    if is_optional(f):
        return None
    kind = classify_field(f)
    if not isinstance(kind, PrimitiveField):
        return ()
    kafka_type = f.metadata.get("kafka_type", "")
    return _ZERO_BY_KAFKA_TYPE.get(kafka_type, 0)


def build(cls: type[T], **values: Any) -> T:
    """An entity of `cls` from the values it has fields for; schema defaults for
    the rest. For responses whose older versions have fields the newest lacks."""
    wanted = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        wanted[f.name] = values[f.name] if f.name in values else _default_for(f)
    return cls(**wanted)
