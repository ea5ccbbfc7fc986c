"""How a kio entity's fields look on the wire, read from its dataclass.

kio generates one frozen dataclass per message version; each field's type
says whether it is an entity, an array (``tuple[X, ...]``) or nullable
(``X | None``), and its metadata holds the Kafka type and, for tagged
fields, the tag. kio's own reading of this lives in a private module, so we
read the same public facts (``dataclasses.fields``, the type annotations,
the metadata) here, once; tests/unit/protocol/test_kio_schema.py fails
loudly if kio's classes stop looking like this.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaField:
    field: dataclasses.Field[Any]
    optional: bool
    """None is allowed: for an array, the array (or its elements)."""
    array: bool
    entity: type | None
    """The nested entity class (of the elements, for an array), else None."""
    kafka_type: str | None
    """The primitive's Kafka type ("int32", "string", ...); None for entities."""
    tag: int | None
    """The tag of a tagged field, else None."""

    @property
    def name(self) -> str:
        return self.field.name


def schema_fields(entity_type: type) -> tuple[SchemaField, ...]:
    """The fields of a kio entity class, in wire order."""
    return _schema_fields(entity_type)


@cache
def _schema_fields(entity_type: Any) -> tuple[SchemaField, ...]:
    hints = typing.get_type_hints(entity_type)
    return tuple(_read(f, hints[f.name]) for f in dataclasses.fields(entity_type))


def _read(field: dataclasses.Field[Any], annotation: Any) -> SchemaField:
    inner, optional = _without_none(annotation)
    array = typing.get_origin(inner) is tuple
    if array:
        args = typing.get_args(inner)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"{field.name}: not a kio array type: {annotation!r}")
        inner, nullable_elements = _without_none(args[0])
        optional = optional or nullable_elements
    entity = inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
    kafka_type = field.metadata.get("kafka_type")
    if entity is None and not isinstance(kafka_type, str):
        raise TypeError(f"{field.name}: a primitive without a kafka_type: {annotation!r}")
    tag = field.metadata.get("tag")
    return SchemaField(
        field=field,
        optional=optional,
        array=array,
        entity=entity,
        kafka_type=None if entity is not None else kafka_type,
        tag=None if tag is None else int(tag),
    )


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """The type without `| None`, and whether it had it."""
    if typing.get_origin(annotation) not in (types.UnionType, typing.Union):
        return annotation, False
    args = [a for a in typing.get_args(annotation) if a is not types.NoneType]
    if len(args) != 1:
        raise TypeError(f"not a kio type: {annotation!r}")
    return args[0], len(args) < len(typing.get_args(annotation))
