"""Array parameters packed in PostgreSQL's binary array format, ready to send.

The store writer sends every append as columns of arrays (``unnest``).
psycopg's list dumper finds each list's element type and dims and dumps each
element in Python: about 20 µs an array, ten arrays a transaction, more CPU
than the rest of the writer's turn. These pack an array in one call (a
``struct`` format per length, cached) into a ``bytes`` subclass whose psycopg
dumper passes it through as is, with the array's type oid.

The format: dimensions (1, or 0 when empty), a has-nulls flag (0), the
element type's oid, then the length and lower bound (1) of the dimension, and
each element as its byte length and its binary value.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache

from psycopg import adapters
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper
from psycopg.pq import Format


class BinaryArray(bytes):
    """An array already in binary format; ``ELEMENT`` and ``OID`` name its types."""

    ELEMENT = 0
    OID = 0


class _Int8(BinaryArray):
    ELEMENT, OID = 20, 1016


class _Int4(BinaryArray):
    ELEMENT, OID = 23, 1007


class _Int2(BinaryArray):
    ELEMENT, OID = 21, 1005


class _Text(BinaryArray):
    ELEMENT, OID = 25, 1009


class _Bytea(BinaryArray):
    ELEMENT, OID = 17, 1001


_EMPTY = struct.Struct(">iii")
_HEADER = struct.Struct(">iiiii")
_LENGTH = struct.Struct(">i").pack


@lru_cache(maxsize=512)
def _fixed(code: str, count: int) -> struct.Struct:
    """Header and ``count`` elements (struct ``code``), each after its length."""
    return struct.Struct(">iiiii" + f"i{code}" * count)


def _packed(kind: type[BinaryArray], code: str, size: int, values: Sequence[int]) -> BinaryArray:
    count = len(values)
    if not count:
        return kind(_EMPTY.pack(0, 0, kind.ELEMENT))
    fields: list[int] = [1, 0, kind.ELEMENT, count, 1]
    for value in values:
        fields.append(size)
        fields.append(value)
    return kind(_fixed(code, count).pack(*fields))


def bigint_array(values: Sequence[int]) -> BinaryArray:
    return _packed(_Int8, "q", 8, values)


def int_array(values: Sequence[int]) -> BinaryArray:
    return _packed(_Int4, "i", 4, values)


def smallint_array(values: Sequence[int]) -> BinaryArray:
    return _packed(_Int2, "h", 2, values)


def bytea_array(values: Sequence[bytes]) -> BinaryArray:
    return _variable(_Bytea, values)


def text_array(values: Sequence[str]) -> BinaryArray:
    return _variable(_Text, [v.encode() for v in values])


def _variable(kind: type[BinaryArray], values: Sequence[bytes]) -> BinaryArray:
    if not values:
        return kind(_EMPTY.pack(0, 0, kind.ELEMENT))
    parts = [_HEADER.pack(1, 0, kind.ELEMENT, len(values), 1)]
    for value in values:
        parts.append(_LENGTH(len(value)))
        parts.append(value)
    return kind(b"".join(parts))


class _PassThrough(Dumper):
    format = Format.BINARY

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        self.oid = cls.OID  # type: ignore[attr-defined]

    def dump(self, obj: object) -> bytes:
        assert isinstance(obj, BinaryArray)
        return obj


for _kind in (_Int8, _Int4, _Int2, _Text, _Bytea):
    adapters.register_dumper(_kind, _PassThrough)
