"""Produce requests pipelined on one connection: the next one is handled while
an earlier one waits for durability, answers keep the request order, and any
other request waits for the Produce requests before it."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records, i32Timedelta

from kgroups import handlers
from kgroups.errors import ErrorCode
from kgroups.handlers.pipelining import release
from kgroups.protocol import apis
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch

from broker_thread import BrokerThread
from raw_wire import call_once, decode_response, encode_request, read_frame

TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))


def _produce(value: bytes) -> ProduceRequest:
    batch = encode_batch([(None, value, (), 0)])
    return ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName("t"),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )


def _create_topic(port: int) -> None:
    created = call_once(
        port,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName("t"),
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=TIMEOUT,
            validate_only=False,
        ),
    )
    assert created.topics[0].error_code == ErrorCode.none


def _correlation(frame: bytes) -> int:
    return int(struct.unpack_from(">i", frame)[0])


def _nothing_to_read(s: socket.socket, wait: float = 0.3) -> bool:
    s.settimeout(wait)
    try:
        s.recv(1, socket.MSG_PEEK)
    except TimeoutError:
        return True
    finally:
        s.settimeout(10)
    return False


def test_a_produce_waiting_for_durability_lets_the_next_one_in(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held Produce requests: the second is handled before the first is answered;
    the answers and the ApiVersions behind them come in request order."""
    started: list[int] = []
    gates: dict[int, asyncio.Event] = {}
    real = handlers.ROUTES[apis.PRODUCE].handler

    async def held(b: Any, ctx: Any, body: Any) -> object:
        started.append(ctx.correlation_id)
        gate = gates.setdefault(ctx.correlation_id, asyncio.Event())
        answer = await real(b, ctx, body)  # appended (no fsync asked here)
        release()
        await gate.wait()  # as if for durability
        return answer

    _create_topic(broker.port)
    monkeypatch.setitem(handlers.ROUTES, apis.PRODUCE, handlers.Route(held))

    def open_gate(correlation: int) -> None:
        broker.call(lambda: gates[correlation].set())

    requests = (
        encode_request(_produce(b"a"), 1)
        + encode_request(_produce(b"b"), 2)
        + encode_request(ApiVersionsRequest(), 3)
    )
    assert broker.broker is not None
    with socket.create_connection(("127.0.0.1", broker.broker.port), 10) as s:
        s.sendall(requests)
        deadline = threading.Event()
        for _ in range(100):
            if started == [1, 2]:
                break
            deadline.wait(0.02)
        assert started == [1, 2]  # the second is in while the first waits
        open_gate(2)
        assert _nothing_to_read(s)  # the second's answer waits for the first's
        open_gate(1)
        frames = [read_frame(s) for _ in range(3)]
    assert [_correlation(f) for f in frames] == [1, 2, 3]
    first, second = (decode_response(ProduceRequest, f) for f in frames[:2])
    offsets = [r.responses[0].partition_responses[0].base_offset for r in (first, second)]
    assert offsets == [0, 1]


def test_pipelined_produce_requests_land_in_order_with_fsync(tmp_path: Path) -> None:
    """With an fsync after every append, many Produce requests sent back to back
    are all acknowledged, in order, at consecutive offsets."""
    b = BrokerThread(tmp_path / "data", log_flush_interval_messages=1).start()
    try:
        _create_topic(b.port)
        count = 200
        requests = b"".join(encode_request(_produce(b"%d" % i), i) for i in range(count))
        with socket.create_connection(("127.0.0.1", b.port), 10) as s:
            s.settimeout(30)
            s.sendall(requests)
            frames = [read_frame(s) for _ in range(count)]
        assert [_correlation(f) for f in frames] == list(range(count))
        answers = [
            decode_response(ProduceRequest, f).responses[0].partition_responses[0] for f in frames
        ]
        assert [a.error_code for a in answers] == [ErrorCode.none] * count
        assert [a.base_offset for a in answers] == list(range(count))
    finally:
        b.stop()


def test_pipelined_produce_requests_hold_at_most_a_request_size_of_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the first, pipelined Produce requests hold at most
    socket.request.max.bytes: the third of ~1 KB each waits for the first."""
    b = BrokerThread(tmp_path / "data", socket_request_max_bytes=2500).start()
    try:
        _create_topic(b.port)
        started: list[int] = []
        gates: dict[int, asyncio.Event] = {}
        real = handlers.ROUTES[apis.PRODUCE].handler

        async def held(broker: Any, ctx: Any, body: Any) -> object:
            started.append(ctx.correlation_id)
            gate = gates.setdefault(ctx.correlation_id, asyncio.Event())
            answer = await real(broker, ctx, body)
            release()
            await gate.wait()
            return answer

        monkeypatch.setitem(handlers.ROUTES, apis.PRODUCE, handlers.Route(held))
        requests = b"".join(encode_request(_produce(b"v" * 900), c) for c in (1, 2, 3))
        with socket.create_connection(("127.0.0.1", b.port), 10) as s:
            s.sendall(requests)
            pause = threading.Event()
            for _ in range(100):
                if started == [1, 2]:
                    break
                pause.wait(0.02)
            pause.wait(0.3)
            assert started == [1, 2]  # the third would pass the bound
            b.call(lambda: gates[1].set())
            assert _correlation(read_frame(s)) == 1
            for _ in range(100):
                if started == [1, 2, 3]:
                    break
                pause.wait(0.02)
            assert started == [1, 2, 3]
            b.call(lambda: gates[2].set())
            b.call(lambda: gates[3].set())
            assert [_correlation(read_frame(s)) for _ in range(2)] == [2, 3]
    finally:
        b.stop()
