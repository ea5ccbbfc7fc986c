"""The OpenTelemetry metrics a client pushes (KIP-714): an OTLP ``MetricsData``
protobuf message, read here field by field for what the Prometheus endpoint
shows. Only the wire format is needed, so no protobuf library is: varints,
fixed 64-bit numbers and length-delimited fields, every length checked against
the bytes that are there. Unknown fields are skipped, as protobuf readers do.

Read: gauges and sums (their data points' numbers and attributes, a sum's
temporality and monotonicity), and histograms' and summaries' count and sum.
Exponential histograms, exemplars and resource attributes are skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["CUMULATIVE", "DELTA", "BadMetrics", "Point", "read_metrics_data"]

DELTA = 1
CUMULATIVE = 2

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_DOUBLE = struct.Struct("<d")
_INT64 = struct.Struct("<q")
_UINT64 = struct.Struct("<Q")
# Nesting is fixed by the schema; attributes' values may nest (arrays, maps),
# which are not read, so no recursion depends on the payload.


class BadMetrics(ValueError):
    """The payload is not a MetricsData message."""


@dataclass(frozen=True, slots=True)
class Point:
    """One number of one metric: a gauge's or sum's value, or a histogram's
    or summary's ``_count`` / ``_sum``."""

    name: str
    kind: str
    """``gauge``, ``counter`` (a monotonic sum) or ``sum`` (one that is not)."""
    attributes: tuple[tuple[str, str], ...]
    value: float
    delta: bool
    """The value is the change since the previous push (delta temporality)."""


def read_metrics_data(data: bytes) -> list[Point]:
    points: list[Point] = []
    view = memoryview(data)
    for field, _wire, resource_metrics in _fields(view):
        if field == 1:
            for f, _w, scope_metrics in _fields(_message(resource_metrics)):
                if f == 2:
                    for g, _w2, metric in _fields(_message(scope_metrics)):
                        if g == 2:
                            points.extend(_metric(_message(metric)))
    return points


def _metric(view: memoryview) -> Iterator[Point]:
    name = ""
    bodies: list[tuple[int, memoryview]] = []
    for field, _wire, value in _fields(view):
        if field == 1:
            name = _text(value)
        elif field in (5, 7, 9, 11):  # gauge, sum, histogram, summary
            bodies.append((field, _message(value)))
    if not name:
        raise BadMetrics("a metric without a name")
    for field, body in bodies:
        if field == 5:
            for point in _repeated(body, 1):
                attributes, number = _number_point(point)
                yield Point(name, "gauge", attributes, number, False)
        elif field == 7:
            temporality, monotonic = _temporality(body), _flag(body, 3)
            kind = "counter" if monotonic else "sum"
            for point in _repeated(body, 1):
                attributes, number = _number_point(point)
                yield Point(name, kind, attributes, number, temporality == DELTA)
        else:
            # A summary has no temporality: its count and sum are cumulative.
            delta = field == 9 and _temporality(body) == DELTA
            for point in _repeated(body, 1):
                attributes, count, total = _distribution_point(point, field == 9)
                yield Point(name + "_count", "counter", attributes, count, delta)
                yield Point(name + "_sum", "counter", attributes, total, delta)


def _number_point(view: memoryview) -> tuple[tuple[tuple[str, str], ...], float]:
    attributes: list[tuple[str, str]] = []
    number = 0.0
    for field, wire, value in _fields(view):
        if field == 7:
            attributes.append(_key_value(_message(value)))
        elif field == 4 and wire == _FIXED64:
            number = _DOUBLE.unpack(_message(value))[0]
        elif field == 6 and wire == _FIXED64:
            number = float(_INT64.unpack(_message(value))[0])
    return tuple(attributes), number


def _distribution_point(
    view: memoryview, histogram: bool
) -> tuple[tuple[tuple[str, str], ...], float, float]:
    attributes: list[tuple[str, str]] = []
    count = total = 0.0
    attributes_field = 9 if histogram else 7
    for field, wire, value in _fields(view):
        if field == attributes_field:
            attributes.append(_key_value(_message(value)))
        elif field == 4 and wire == _FIXED64:
            count = float(_UINT64.unpack(_message(value))[0])
        elif field == 5 and wire == _FIXED64:
            total = _DOUBLE.unpack(_message(value))[0]
    return tuple(attributes), count, total


def _key_value(view: memoryview) -> tuple[str, str]:
    key, text = "", ""
    for field, _wire, value in _fields(view):
        if field == 1:
            key = _text(value)
        elif field == 2:
            text = _any_value(_message(value))
    return key, text


def _any_value(view: memoryview) -> str:
    """An attribute's value as label text: strings, booleans and numbers."""
    text = ""
    for field, wire, value in _fields(view):
        if field == 1:
            text = _text(value)
        elif field == 2 and wire == _VARINT:
            text = "true" if value else "false"
        elif field == 3 and wire == _VARINT:
            assert isinstance(value, int)
            text = str(value - (1 << 64) if value >= 1 << 63 else value)
        elif field == 4 and wire == _FIXED64:
            text = repr(_DOUBLE.unpack(_message(value))[0])
    return text


def _temporality(view: memoryview) -> int:
    for field, wire, value in _fields(view):
        if field == 2 and wire == _VARINT:
            assert isinstance(value, int)
            return value
    return 0


def _flag(view: memoryview, wanted: int) -> bool:
    return any(field == wanted and value for field, _w, value in _fields(view))


def _repeated(view: memoryview, wanted: int) -> Iterator[memoryview]:
    for field, _wire, value in _fields(view):
        if field == wanted:
            yield _message(value)


def _message(value: int | memoryview) -> memoryview:
    if not isinstance(value, memoryview):
        raise BadMetrics("a message field is not length-delimited")
    return value


def _text(value: int | memoryview) -> str:
    try:
        return bytes(_message(value)).decode()
    except UnicodeDecodeError:
        raise BadMetrics("a string is not UTF-8") from None


def _fields(view: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value): a varint's int, else the field's bytes."""
    at, end = 0, len(view)
    while at < end:
        key = view[at]  # tags and lengths are mostly one byte: read inline
        if key < 0x80:
            at += 1
        else:
            key, at = _varint(view, at)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise BadMetrics("field number 0")
        if wire == _LENGTH:
            if at >= end:
                raise BadMetrics("a length runs past the end of its message")
            length = view[at]
            if length < 0x80:
                at += 1
            else:
                length, at = _varint(view, at)
            if at + length > end:
                raise BadMetrics("a field runs past the end of its message")
            yield field, wire, view[at : at + length]
            at += length
        elif wire == _FIXED64:
            yield field, wire, _take(view, at, 8)
            at += 8
        elif wire == _VARINT:
            number, at = _varint(view, at)
            yield field, wire, number
        elif wire == _FIXED32:
            yield field, wire, _take(view, at, 4)
            at += 4
        else:
            raise BadMetrics(f"wire type {wire}")


def _take(view: memoryview, at: int, length: int) -> memoryview:
    if at + length > len(view):
        raise BadMetrics("a field runs past the end of its message")
    return view[at : at + length]


def _varint(view: memoryview, at: int) -> tuple[int, int]:
    number, shift = 0, 0
    while True:
        if at >= len(view):
            raise BadMetrics("a varint runs past the end of its message")
        byte = view[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return number, at
        shift += 7
        if shift >= 70:
            raise BadMetrics("a varint longer than 10 bytes")
