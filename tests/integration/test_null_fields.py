"""A null in any nullable field of any request the broker serves is answered
with Kafka's error codes, never by closing the connection."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest
from kio.schema.metadata.v11.request import MetadataRequest, MetadataRequestTopic
from kio.serial import entity_reader

from kgroups.protocol import apis
from kgroups.protocol.types import TopicName

from broker_thread import BrokerThread
from kio_samples import encode
from wire_fuzz import Seed, framed, header, seeds

NULL_SEEDS = [s for s in seeds(with_nulls=True) if s.null_at]


def _roundtrip(port: int, request: bytes) -> bytes | None:
    """The response, or None when the broker closed the connection instead."""
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        s.settimeout(10)
        s.sendall(framed(request))
        head = _read(s, 4)
        if head is None:
            return None
        return _read(s, struct.unpack(">i", head)[0])


def _read(s: socket.socket, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        try:
            chunk = s.recv(n - len(out))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        out += chunk
    return out


@pytest.fixture(scope="module")
def null_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path_factory.mktemp("nulls") / "data").start()
    try:
        yield b
    finally:
        b.stop()


def test_every_served_version_has_nullable_fields_to_try() -> None:
    assert len(NULL_SEEDS) > 50


def _name(seed: Seed) -> str:
    return f"{apis.SUPPORTED[seed.api_key].name}-v{seed.version}-{'.'.join(seed.null_at)}"


@pytest.mark.parametrize("seed", NULL_SEEDS, ids=_name)
def test_null_is_answered(null_broker: BrokerThread, seed: Seed) -> None:
    assert null_broker.broker is not None
    port = null_broker.broker.port
    response = _roundtrip(port, seed.header + seed.body)
    assert response is not None, "connection closed instead of an answer"
    assert struct.unpack_from(">i", response)[0] == 1  # the correlation id


def test_metadata_before_v12_refuses_a_topic_without_a_name(null_broker: BrokerThread) -> None:
    assert null_broker.broker is not None
    request = MetadataRequest(
        topics=(
            MetadataRequestTopic(topic_id=None, name=None),
            MetadataRequestTopic(topic_id=None, name=TopicName("named")),
        ),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    response = _roundtrip(null_broker.broker.port, header(apis.METADATA, 11) + encode(request))
    assert response is not None
    read = entity_reader(apis.codec(apis.METADATA, 11).response_type)
    body, _ = read(response, 5)
    assert [(t.name, t.error_code.value) for t in body.topics] == [("", 42), ("named", 42)]


# Arrays the schema does not let be null, sent as null: Kafka cannot parse such
# a request and closes the connection; so does the broker, with a log line.
NON_NULLABLE_NULLS = [
    # OffsetFetch v8: groups.
    header(apis.OFFSET_FETCH, 8) + b"\x00\x00\x00",
    # ListOffsets v7: a topic whose partitions are null.
    header(apis.LIST_OFFSETS, 7) + struct.pack(">ib", -1, 0) + b"\x02\x02t\x00\x00\x00",
    # ListOffsets v1 (not flexible): the same with int32 -1.
    header(apis.LIST_OFFSETS, 1) + struct.pack(">iih", -1, 1, 1) + b"t" + struct.pack(">i", -1),
]


@pytest.mark.parametrize(
    "request_bytes",
    NON_NULLABLE_NULLS,
    ids=["OffsetFetch-v8-groups", "ListOffsets-v7-partitions", "ListOffsets-v1-partitions"],
)
def test_null_where_kafka_allows_none_closes_only_that_connection(
    null_broker: BrokerThread, request_bytes: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    assert null_broker.broker is not None
    port = null_broker.broker.port
    assert _roundtrip(port, request_bytes) is None
    assert "was serialized as null" in caplog.text
    assert "internal error" not in caplog.text
    assert _roundtrip(port, header(apis.API_VERSIONS, 0)) is not None
