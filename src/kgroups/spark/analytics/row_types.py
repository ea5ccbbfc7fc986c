"""Spark row types written out in Python: ``mapInArrow`` functions build their Arrow
schemas from these on the executors, where no JVM is at hand to parse DDL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["arrow_of", "struct"]

_SIMPLE: dict[str, DataType] = {
    "string": StringType(),
    "int": IntegerType(),
    "long": LongType(),
    "boolean": BooleanType(),
    "strings": ArrayType(StringType()),
}


def struct(*fields: tuple[str, str | DataType]) -> StructType:
    """A struct of (name, type) where a type is a name of _SIMPLE or a DataType."""
    return StructType(
        [
            StructField(name, _SIMPLE[kind] if isinstance(kind, str) else kind)
            for name, kind in fields
        ]
    )


def arrow_of(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
