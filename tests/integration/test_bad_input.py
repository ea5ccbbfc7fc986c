"""Garbage on the wire closes that connection only; every other client is served."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroups.protocol import apis

from broker_thread import BrokerThread
from process_broker import BrokerProcess
from wire_fuzz import extreme_lengths, framed, mutant, seeds


def _api_versions_roundtrip(port: int) -> bytes:
    """A well-behaved ApiVersions v0 request on a fresh connection."""
    body = struct.pack(">hhih", 18, 0, 99, 4) + b"test"
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(s, 4))[0]
        return _read(s, size)


def _read(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _send_garbage(port: int, payload: bytes, wait: float = 2) -> None:
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.settimeout(wait)
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except OSError:
            pass


def test_well_formed_request_is_answered(broker: BrokerThread) -> None:
    assert broker.broker is not None
    response = _api_versions_roundtrip(broker.broker.port)
    correlation, error = struct.unpack_from(">ih", response)
    assert (correlation, error) == (99, 0)


def test_specific_bad_frames(broker: BrokerThread) -> None:
    assert broker.broker is not None
    port = broker.broker.port
    frames = [
        struct.pack(">i", -1),  # negative size
        struct.pack(">i", 200 * 1024 * 1024),  # above socket.request.max.bytes
        struct.pack(">i", 100) + b"short",  # truncated frame
        struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1),  # unknown API key
        struct.pack(">i", 10) + struct.pack(">hhih", 3, 99, 1, 0),  # unsupported version
        struct.pack(">i", 12) + struct.pack(">hhih", 3, 1, 1, 0) + b"\xff\xff",  # bad body
        b"\x00\x00",  # torn size prefix
    ]
    for frame in frames:
        _send_garbage(port, frame)
        assert struct.unpack_from(">ih", _api_versions_roundtrip(port)) == (99, 0)


def test_unsupported_api_versions_version_gets_v0_answer(broker: BrokerThread) -> None:
    assert broker.broker is not None
    body = struct.pack(">hhih", 18, 42, 7, 0)
    with socket.create_connection(("127.0.0.1", broker.broker.port), 5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(s, 4))[0]
        response = _read(s, size)
    correlation, error, count = struct.unpack_from(">ihi", response)
    assert (correlation, error) == (7, 35)  # UNSUPPORTED_VERSION
    assert count > 10


# Lengths that a native reader would allocate for before reading: the broker
# must refuse them, not abort (a broker process, so an abort is seen, not suffered).
LENGTH_BOMBS = [
    # Metadata v12, topics: a compact array of 0xFFFFFFFF - 1 elements.
    struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x0f\x00\x00\x00",
    # The same with a five-byte varint of 2**35 - 1.
    struct.pack(">hhih", 3, 12, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x7f\x00\x00\x00",
    # Metadata v1, topics: a legacy array of 2**31 - 1 elements.
    struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff",
    # OffsetFetch v8, groups: a compact array of 0xFFFFFFFF - 1 elements.
    struct.pack(">hhih", 9, 8, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x0f\x00\x00",
]


def test_length_bombs_are_refused_and_the_broker_lives(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        for request in LENGTH_BOMBS:
            _send_garbage(broker.port, struct.pack(">i", len(request)) + request)
            assert broker.proc is not None and broker.proc.poll() is None, "broker died"
            assert struct.unpack_from(">ih", _api_versions_roundtrip(broker.port)) == (99, 0)
    finally:
        broker.stop()
    assert "elements but only" in broker.log_path.read_text()


@pytest.fixture(scope="module")
def steady_producer(shared_broker: BrokerThread) -> Iterator[list[int]]:
    """A well-behaved client producing the whole time the fuzzer runs."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic("steady", 1, 1)])["steady"].result(20)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 1})
    outcome = [0, 0]  # delivered, failed
    stop = threading.Event()

    def deliver(err: object, _msg: object) -> None:
        outcome[1 if err else 0] += 1

    def run() -> None:
        while not stop.is_set():
            producer.produce("steady", value=b"ok", on_delivery=deliver)
            producer.poll(0.01)
        producer.flush(10)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield outcome
    stop.set()
    thread.join(20)
    assert outcome[0] > 0 and outcome[1] == 0, outcome


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    payload=st.one_of(
        st.binary(max_size=300),
        st.builds(
            lambda key, version, body: (
                struct.pack(">i", 8 + len(body)) + struct.pack(">hhi", key, version, 1) + body
            ),
            st.sampled_from([0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22]),
            st.integers(0, 12),
            st.binary(max_size=200),
        ),
    )
)
def test_fuzzed_frames_never_hurt_the_broker(
    shared_broker: BrokerThread, steady_producer: list[int], payload: bytes
) -> None:
    assert shared_broker.broker is not None
    port = shared_broker.broker.port
    _send_garbage(port, payload)
    assert struct.unpack_from(">ih", _api_versions_roundtrip(port)) == (99, 0)


# Per API version, this many of its requests with a length pushed to an extreme
# (every offset and extreme is covered in-process by tests/unit/protocol/test_bounds.py).
EXTREMES_PER_VERSION = 48


@pytest.mark.parametrize("api_key", sorted(apis.SUPPORTED), ids=lambda k: apis.SUPPORTED[k].name)
def test_extreme_lengths_in_every_version_never_hurt_the_broker(
    shared_broker: BrokerThread, api_key: int, caplog: pytest.LogCaptureFixture
) -> None:
    assert shared_broker.broker is not None
    port = shared_broker.broker.port
    rng = random.Random(api_key)
    for seed in seeds():
        if seed.api_key != api_key:
            continue
        frames = list(extreme_lengths(seed))
        for request in rng.sample(frames, min(EXTREMES_PER_VERSION, len(frames))):
            # A frame that happens to be a valid long poll is not waited for.
            _send_garbage(port, framed(request), wait=0.5)
        assert struct.unpack_from(">ih", _api_versions_roundtrip(port)) == (99, 0)
    _no_internal_errors(caplog)


def test_random_breakage_of_every_version_never_hurts_the_broker(
    shared_broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    assert shared_broker.broker is not None
    port = shared_broker.broker.port
    rng = random.Random(7)
    corpus = seeds()
    for i in range(5000):
        _send_garbage(port, framed(mutant(rng, rng.choice(corpus))), wait=0.5)
        if i % 200 == 0:
            assert struct.unpack_from(">ih", _api_versions_roundtrip(port)) == (99, 0)
    _no_internal_errors(caplog)


def _no_internal_errors(caplog: pytest.LogCaptureFixture) -> None:
    time.sleep(0.2)  # requests still in flight log after their connection closed
    internal = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert not internal, internal[:3]
