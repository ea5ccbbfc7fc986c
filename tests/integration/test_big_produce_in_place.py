"""Produce requests far bigger than one socket read, whose batches the
broker stamps where they lie in the request: each batch is stored with its
offsets, the leader epoch and its CRC intact, a retried one is answered as
the duplicate it is, and a corrupt one is still refused."""

from __future__ import annotations

import socket
import struct
from datetime import timedelta
from typing import Any, cast

from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records, i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import batch_crc, encode_batch, iter_batches

from broker_thread import BrokerThread
from raw_wire import decode_response, encode_request, read_frame

TIMEOUT = i32Timedelta.parse(timedelta(seconds=30))
PRODUCER_ID = 4242


def _batch(records: int, sequence: int, fill: bytes) -> bytes:
    return encode_batch(
        [(None, fill * 1000, (), 1_700_000_000_000 + i) for i in range(records)],
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        base_sequence=sequence,
    )


def _produce(s: socket.socket, parts: list[tuple[int, bytes]], correlation: int) -> Any:
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName("big"),
                partition_data=tuple(
                    PartitionProduceData(index=i32(p), records=cast(Records, b)) for p, b in parts
                ),
            ),
        ),
    )
    s.sendall(encode_request(request, correlation))
    return decode_response(ProduceRequest, read_frame(s))


def _answers(response: Any) -> list[tuple[int, int]]:
    return [
        (p.error_code, p.base_offset) for t in response.responses for p in t.partition_responses
    ]


def test_big_requests_are_stored_stamped(tmp_path: Any) -> None:
    broker = BrokerThread(tmp_path / "data", num_partitions=2).start()
    try:
        assert broker.broker is not None
        broker.call(lambda: broker.broker.create_topic("big", 2, {}))  # type: ignore[union-attr]
        first = [(0, _batch(300, 0, b"a")), (1, _batch(200, 0, b"b"))]
        second = [(0, _batch(250, 300, b"c"))]
        with socket.create_connection(("127.0.0.1", broker.port)) as s:
            assert _answers(_produce(s, first, 1)) == [(ErrorCode.none, 0), (ErrorCode.none, 0)]
            assert _answers(_produce(s, second, 2)) == [(ErrorCode.none, 300)]
            # The same batch again: the producer's retry, answered where it went.
            assert _answers(_produce(s, second, 3)) == [(ErrorCode.none, 300)]
            corrupt = bytearray(_batch(100, 550, b"d"))
            corrupt[-1] ^= 0xFF
            assert _answers(_produce(s, [(0, bytes(corrupt))], 4)) == [
                (ErrorCode.corrupt_message, -1)
            ]

        def stored(partition: int) -> list[tuple[int, int, int, bool]]:
            plog = broker.broker.partitions.log("big", partition)  # type: ignore[union-attr]
            data = plog.read(0, 10 << 20)
            out = []
            for pos, header in iter_batches(data):
                epoch = struct.unpack_from(">i", data, pos + 12)[0]
                crc = batch_crc(data[pos : pos + header.size], header.size)
                out.append((header.base_offset, header.records_count, epoch, crc == header.crc))
            return out

        leader_epoch = broker.call(
            lambda: broker.broker.partitions.log("big", 0).leader_epoch  # type: ignore[union-attr]
        )
        assert broker.call(lambda: stored(0)) == [
            (0, 300, leader_epoch, True),
            (300, 250, leader_epoch, True),
        ]
        assert broker.call(lambda: stored(1)) == [(0, 200, leader_epoch, True)]
    finally:
        broker.stop()
