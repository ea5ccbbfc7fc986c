"""OTLP MetricsData payloads as clients push them (KIP-714), written field by
field for tests: the protobuf wire format of opentelemetry-proto's
metrics/v1 and common/v1 messages, no library needed."""

from __future__ import annotations

import struct
from collections.abc import Sequence

Attributes = Sequence[tuple[str, str | int | bool]]

DELTA, CUMULATIVE = 1, 2


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _len(field: int, payload: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(payload)) + payload


def _fixed64(field: int, fmt: str, value: float) -> bytes:
    return _tag(field, 1) + struct.pack(fmt, value)


def _key_value(key: str, value: str | int | bool) -> bytes:
    if isinstance(value, bool):
        any_value = _tag(2, 0) + _varint(int(value))
    elif isinstance(value, int):
        any_value = _tag(3, 0) + _varint(value)
    else:
        any_value = _len(1, value.encode())
    return _len(1, key.encode()) + _len(2, any_value)


def number_point(value: float, attributes: Attributes = (), *, as_int: bool = False) -> bytes:
    out = _fixed64(3, "<Q", 1_700_000_000_000_000_000)  # time_unix_nano
    out += _fixed64(6, "<q", int(value)) if as_int else _fixed64(4, "<d", value)
    for key, v in attributes:
        out += _len(7, _key_value(key, v))
    return out


def gauge(name: str, *points: bytes) -> bytes:
    body = b"".join(_len(1, p) for p in points)
    return _len(1, name.encode()) + _len(2, b"a description") + _len(5, body)


def sum_metric(
    name: str, *points: bytes, temporality: int = DELTA, monotonic: bool = True
) -> bytes:
    body = b"".join(_len(1, p) for p in points)
    body += _tag(2, 0) + _varint(temporality) + _tag(3, 0) + _varint(int(monotonic))
    return _len(1, name.encode()) + _len(7, body)


def histogram(
    name: str, count: int, total: float, attributes: Attributes = (), *, temporality: int = DELTA
) -> bytes:
    point = _fixed64(4, "<Q", count) + _fixed64(5, "<d", total)
    point += _len(6, struct.pack("<QQ", count, 0)) + _len(7, struct.pack("<d", 1.0))
    for key, v in attributes:
        point += _len(9, _key_value(key, v))
    body = _len(1, point) + _tag(2, 0) + _varint(temporality)
    return _len(1, name.encode()) + _len(9, body)


def metrics_data(*metrics: bytes, resource: Attributes = ()) -> bytes:
    """One ResourceMetrics with one ScopeMetrics holding ``metrics``."""
    scope = _len(1, _len(1, b"librdkafka")) + b"".join(_len(2, m) for m in metrics)
    resource_body = b"".join(_len(1, _key_value(k, v)) for k, v in resource)
    return _len(1, _len(1, resource_body) + _len(2, scope))
