"""Every length in a message checked against the bytes that are really there.

kio's native reader reserves room for an array's declared element count before
it reads the first element, so a few bytes claiming 2**32 elements make it ask
for tens of gigabytes and abort the process, which no `except` can catch. Like
Kafka's own readers, a message is refused when an array, string or bytes field
claims more elements or bytes than remain in it (every element takes at least a
byte), and when an array the schema does not let be null is null (kio would
read it as None). The check walks the bytes once and builds nothing: each kio
entity type is compiled once into a plan, and the plan into straight-line
Python in which a run of fixed-size fields is a single add.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any, NoReturn

from kio.serial import entity_reader

from kgroups.protocol.kio_schema import SchemaField, schema_fields

# How many bytes each fixed-size kio type takes on the wire.
_FIXED_SIZES = {
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float64": 8,
    "bool": 1,
    "error_code": 2,
    "uuid": 16,
    "timedelta_i32": 4,
    "timedelta_i64": 8,
    "datetime_i64": 8,
}

# Plan steps: (opcode, argument).
_SKIP = 0  # argument: a byte count
_COMPACT_BYTES = 1  # uvarint length + 1 (0 is null), then that many bytes
_LEGACY_STRING = 2  # int16 length (-1 is null)
_LEGACY_BYTES = 3  # int32 length (-1 is null)
# Arrays' argument: (the element's fixed size or its plan, the field's name
# when it may not be null, else None).
_COMPACT_ARRAY = 4  # uvarint count + 1 (0 is null)
_LEGACY_ARRAY = 5  # int32 count (-1 is null)
_NULLABLE_ENTITY = 6  # int8 marker (-1 is null), then the entity's plan
_TAGGED_FIELDS = 7  # argument: plans of the known tags

Plan = tuple[tuple[int, Any], ...]
_Walker = Callable[[bytes, int, int], int]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class BadLength(ValueError):
    """A length field claims more than the message holds, or null where the
    schema allows none."""


def checker(entity_type: Any) -> Callable[[bytes, int], None]:
    """A function that raises BadLength when the `entity_type` message
    starting at the given offset declares a length its bytes cannot hold."""
    walk = _compile(_plan(entity_type))

    def check(buffer: bytes, offset: int) -> None:
        try:
            walk(buffer, offset, len(buffer))
        except (IndexError, struct.error):
            raise BadLength("message ends inside a field") from None

    return check


def bounded_reader(entity_type: Any) -> Callable[[bytes, int], tuple[Any, int]]:
    """kio's reader for `entity_type`, after the check."""
    check = checker(entity_type)
    read = entity_reader(entity_type)

    def read_bounded(buffer: bytes, offset: int) -> tuple[Any, int]:
        check(buffer, offset)
        result: tuple[Any, int] = read(buffer, offset)
        return result

    return read_bounded


@cache
def _plan(entity_type: Any) -> Plan:
    flexible: bool = entity_type.__flexible__
    steps: list[tuple[int, Any]] = []
    tagged: dict[int, Plan] = {}
    for field in schema_fields(entity_type):
        field_steps = _field_steps(field, flexible, entity_type.__name__ == "RequestHeader")
        tag = field.tag
        if tag is None:
            steps.extend(field_steps)
        else:
            tagged[tag] = _merged(field_steps)
    if flexible:
        steps.append((_TAGGED_FIELDS, tagged))
    return _merged(steps)


def _field_steps(field: SchemaField, flexible: bool, header: bool) -> Plan:
    if header and field.name == "client_id":
        return ((_LEGACY_STRING, None),)
    array = _COMPACT_ARRAY if flexible else _LEGACY_ARRAY
    # Like Kafka, a null where the schema allows none is malformed: kio would
    # read it as None and hand it to code that expects a tuple.
    not_null = None if field.optional else field.name
    if field.entity is not None and field.array:
        return ((array, (_plan(field.entity), not_null)),)
    if field.entity is not None:
        if field.optional:
            return ((_NULLABLE_ENTITY, _plan(field.entity)),)
        return _plan(field.entity)
    assert field.kafka_type is not None
    item = _primitive_step(field.kafka_type, flexible)
    if field.array:
        element = item[1] if item[0] == _SKIP else (item,)
        return ((array, (element, not_null)),)
    return (item,)


def _primitive_step(kafka_type: str, flexible: bool) -> tuple[int, Any]:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return (_SKIP, size)
    if kafka_type not in ("string", "bytes", "records"):
        raise TypeError(f"no length rule for kafka type {kafka_type!r}")
    if flexible:
        return (_COMPACT_BYTES, None)
    return (_LEGACY_STRING, None) if kafka_type == "string" else (_LEGACY_BYTES, None)


def _merged(steps: Any) -> Plan:
    """Adjacent fixed-size steps become one skip."""
    out: list[tuple[int, Any]] = []
    for op, arg in steps:
        if op == _SKIP and out and out[-1][0] == _SKIP:
            out[-1] = (_SKIP, out[-1][1] + arg)
        else:
            out.append((op, arg))
    return tuple(out)


def _compile(plan: Plan) -> _Walker:
    """The plan as straight-line Python: a loop per array, an add per skip."""
    namespace: dict[str, Any] = {
        "INT16": _INT16.unpack_from,
        "INT32": _INT32.unpack_from,
        "uvarint_tail": _uvarint_tail,
        "fail": _fail,
    }
    lines = ["def walk(b, p, end):"]
    _emit(plan, lines, namespace, 1)
    lines += ["    if p > end:", "        fail('message ends inside a field')", "    return p"]
    exec("\n".join(lines), namespace)
    walker: _Walker = namespace["walk"]
    return walker


def _emit(plan: Plan, lines: list[str], namespace: dict[str, Any], depth: int) -> None:
    pad = "    " * depth
    for op, arg in plan:
        if op == _SKIP:
            lines.append(f"{pad}p += {arg}")
        elif op == _COMPACT_BYTES:
            lines += _uvarint_lines(pad)
            lines += [
                f"{pad}if n > 1:",
                f"{pad}    p += n - 1",
                f"{pad}    if p > end:",
                f"{pad}        fail(f'string or bytes of {{n - 1}} bytes, past the end')",
            ]
        elif op in (_LEGACY_STRING, _LEGACY_BYTES):
            width, unpack = (2, "INT16") if op == _LEGACY_STRING else (4, "INT32")
            lines += [
                f"{pad}n = {unpack}(b, p)[0]",
                f"{pad}p += {width} + (n if n > 0 else 0)",
                f"{pad}if p > end or n < -1:",
                f"{pad}    fail(f'string or bytes length {{n}}, past the end or negative')",
            ]
        elif op in (_COMPACT_ARRAY, _LEGACY_ARRAY):
            element, not_null = arg
            if op == _COMPACT_ARRAY:
                lines += _uvarint_lines(pad)
                lines.append(f"{pad}n -= 1")
            else:
                lines += [f"{pad}n = INT32(b, p)[0]", f"{pad}p += 4"]
                lines += [f"{pad}if n < -1:", f"{pad}    fail(f'negative array length {{n}}')"]
            if not_null is not None:
                message = f"non-nullable field {not_null} was serialized as null"
                lines += [f"{pad}if n < 0:", f"{pad}    fail({message!r})"]
            lines += [
                f"{pad}if n > 0:",
                f"{pad}    if n > end - p:",
                f"{pad}        fail(f'array of {{n}} elements but only {{end - p}} bytes left')",
            ]
            if isinstance(element, int):
                lines.append(f"{pad}    p += n * {element}")
            else:
                lines.append(f"{pad}    for _ in range(n):")
                _emit(element, lines, namespace, depth + 2)
        elif op == _NULLABLE_ENTITY:
            lines += [f"{pad}p += 1", f"{pad}if b[p - 1] != 0xFF:"]
            _emit(arg, lines, namespace, depth + 1)
        else:  # _TAGGED_FIELDS
            name = f"tags_{len(namespace)}"
            namespace[name] = {tag: _compile(tag_plan) for tag, tag_plan in arg.items()}
            lines += [
                f"{pad}if b[p]:",
                f"{pad}    p = walk_tagged({name}, b, p, end)",
                f"{pad}else:",
                f"{pad}    p += 1",
            ]
            namespace["walk_tagged"] = _walk_tagged


def _uvarint_lines(pad: str) -> list[str]:
    return [
        f"{pad}n = b[p]",
        f"{pad}p += 1",
        f"{pad}if n & 0x80:",
        f"{pad}    n, p = uvarint_tail(b, p, n)",
    ]


def _walk_tagged(known: dict[int, _Walker], b: bytes, p: int, end: int) -> int:
    count, p = _uvarint(b, p)
    if count > end - p:
        _fail(f"{count} tagged fields but only {end - p} bytes left")
    for _ in range(count):
        tag, p = _uvarint(b, p)
        size, p = _uvarint(b, p)
        if size > end - p:
            _fail(f"tagged field of {size} bytes but only {end - p} left")
        walk = known.get(tag)
        # kio reads a known tag's value as its type and refuses an unknown one.
        p = p + size if walk is None else walk(b, p, end)
    return p


def _fail(reason: str) -> NoReturn:
    raise BadLength(reason)


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first & 0x80:
        return _uvarint_tail(buf, pos + 1, first)
    return first, pos + 1


def _uvarint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of an unsigned varint whose first byte had its high bit set;
    like Kafka, at most five bytes."""
    value = first & 0x7F
    shift = 7
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 35:
            _fail("varint longer than five bytes")
