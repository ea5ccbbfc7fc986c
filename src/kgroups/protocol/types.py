"""Cheap constructors for kio's typed primitives.

kio's phantom types (`i32`, `TopicName`, ...) check their value on
construction, which costs microseconds per call: more than the rest of a
small response. The broker builds values it already knows are in range, so
these helpers only tell the type checker what a value is.
"""

from __future__ import annotations

from typing import cast

from kio.schema import types as schema_types
from kio.static import primitive


def i8(value: int) -> primitive.i8:
    return cast(primitive.i8, value)


def i16(value: int) -> primitive.i16:
    return cast(primitive.i16, value)


def i32(value: int) -> primitive.i32:
    return cast(primitive.i32, value)


def i64(value: int) -> primitive.i64:
    return cast(primitive.i64, value)


def BrokerId(value: int) -> schema_types.BrokerId:
    return cast(schema_types.BrokerId, value)


def ProducerId(value: int) -> schema_types.ProducerId:
    return cast(schema_types.ProducerId, value)


def TopicName(value: str) -> schema_types.TopicName:
    return cast(schema_types.TopicName, value)


def GroupId(value: str) -> schema_types.GroupId:
    return cast(schema_types.GroupId, value)
