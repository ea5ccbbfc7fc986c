"""Reading the OTLP MetricsData clients push (KIP-714) without a protobuf library."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from otlp_payloads import (
    CUMULATIVE,
    gauge,
    histogram,
    metrics_data,
    number_point,
    sum_metric,
)

from kgroups.metrics.otlp import BadMetrics, Point, read_metrics_data


def test_gauges_sums_and_histograms_with_their_attributes() -> None:
    payload = metrics_data(
        gauge(
            "org.apache.kafka.producer.node.request.latency.avg",
            number_point(1.5, [("node.id", "0")]),
            number_point(2.5, [("node.id", "1")]),
        ),
        sum_metric(
            "org.apache.kafka.producer.connection.creation.total", number_point(3, as_int=True)
        ),
        sum_metric("queue.depth", number_point(7.0), temporality=CUMULATIVE, monotonic=False),
        histogram("latency", 4, 10.5, [("topic", "t")]),
        resource=[("client_rack", "r1")],
    )
    assert read_metrics_data(payload) == [
        Point(
            "org.apache.kafka.producer.node.request.latency.avg",
            "gauge",
            (("node.id", "0"),),
            1.5,
            False,
        ),
        Point(
            "org.apache.kafka.producer.node.request.latency.avg",
            "gauge",
            (("node.id", "1"),),
            2.5,
            False,
        ),
        Point("org.apache.kafka.producer.connection.creation.total", "counter", (), 3.0, True),
        Point("queue.depth", "sum", (), 7.0, False),
        Point("latency_count", "counter", (("topic", "t"),), 4.0, True),
        Point("latency_sum", "counter", (("topic", "t"),), 10.5, True),
    ]


def test_attribute_values_of_every_scalar_type_become_text() -> None:
    payload = metrics_data(gauge("g", number_point(1, [("s", "x"), ("i", -3), ("b", True)])))
    assert read_metrics_data(payload)[0].attributes == (("s", "x"), ("i", "-3"), ("b", "true"))


def test_an_empty_payload_has_no_points() -> None:
    assert read_metrics_data(b"") == []


@pytest.mark.parametrize(
    "payload",
    [
        b"\x0a\x05abc",  # a length past the end
        b"\x0a",  # a length missing
        b"\x0b",  # wire type 3 (groups)
        b"\x0a\x02\xff\xff",  # a varint past the end of its message
        b"\x08" + b"\xff" * 11,  # a varint of 11 bytes
        b"\x0a\x02\x12\x00" + b"\x00",  # field number 0
        metrics_data(gauge("", number_point(1))),  # a metric without a name
        metrics_data(b"\x0a\x02\xff\xfe"),  # a name that is not UTF-8
        b"not protobuf at all, just text",
    ],
)
def test_malformed_payloads_are_refused(payload: bytes) -> None:
    with pytest.raises(BadMetrics):
        read_metrics_data(payload)


VALID = metrics_data(
    gauge("g", number_point(1.5, [("node.id", "0")])),
    sum_metric("s", number_point(2, as_int=True)),
    histogram("h", 3, 4.5),
)


@given(st.binary(max_size=300))
def test_any_bytes_are_points_or_refused(data: bytes) -> None:
    try:
        points = read_metrics_data(data)
    except BadMetrics:
        return
    assert all(isinstance(p, Point) for p in points)


@given(st.integers(0, len(VALID) - 1), st.integers(0, 255))
def test_a_changed_byte_of_a_valid_payload_is_points_or_refused(at: int, byte: int) -> None:
    data = bytearray(VALID)
    data[at] = byte
    with contextlib.suppress(BadMetrics):
        read_metrics_data(bytes(data))
