"""The broker's CPU for Produce requests shaped like an idempotent
confluent-kafka producer's in bench/produce_fetch.py (by default one partition
a request, one batch of 1,000 records of 1 KB: librdkafka's idempotent
producer sends a partition a request, and fills its 1 MB batches at once),
measured in-process on the event loop's thread alone, so that neither the
client nor other work on the machine is counted. A client thread sends the
requests over a real socket (at most five in flight, as the producer keeps)
and reads the answers; the broker runs as ``kgroups serve`` does (uvloop).
Prints one JSON object per round: the loop thread's CPU seconds per 100 MB of
record values, and per request. Usage:

    .venv/bin/python bench/produce_request.py [--per-request 1] [--records 1000] [--requests 100]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import socket
import struct
import tempfile
import time
from collections import deque
from io import BytesIO
from pathlib import Path
from typing import Any, cast

from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.serial import entity_writer
from kio.static.primitive import Records, i32Timedelta

from kgroups.config.broker_config import BrokerConfig
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch
from kgroups.server.broker import Broker
from kgroups.testing.defaults import broker_properties

_SIZE = struct.Struct(">i")
_IN_FLIGHT = 5
_PRODUCER_ID = 1000


def build_requests(
    topics: list[str], partitions: int, per_request: int, records: int, size: int, count: int
) -> list[bytes]:
    """``count`` framed Produce v9 requests, each with a batch of ``records``
    records of ``size`` bytes for ``per_request`` partitions, the partitions
    taken in turn and each one's sequences continuing."""
    value = b"x" * size
    now = int(time.time() * 1000)
    write = entity_writer(ProduceRequest)
    timeout = i32Timedelta.parse(datetime.timedelta(seconds=30))
    every = [(topic, p) for topic in topics for p in range(partitions)]
    sequences = dict.fromkeys(every, 0)
    frames = []
    turn = 0
    for n in range(count):
        chosen: dict[str, list[PartitionProduceData]] = {}
        for _ in range(min(per_request, len(every))):
            topic, p = every[turn % len(every)]
            turn += 1
            batch = encode_batch(
                [(None, value, (), now + i) for i in range(records)],
                producer_id=_PRODUCER_ID,
                producer_epoch=0,
                base_sequence=sequences[(topic, p)],
            )
            sequences[(topic, p)] += records
            data = PartitionProduceData(index=i32(p), records=cast(Records, batch))
            chosen.setdefault(topic, []).append(data)
        request = ProduceRequest(
            transactional_id=None,
            acks=i16(-1),
            timeout=timeout,
            topic_data=tuple(
                TopicProduceData(name=TopicName(topic), partition_data=tuple(parts))
                for topic, parts in chosen.items()
            ),
        )
        buf = BytesIO()
        buf.write(struct.pack(">hhih", 0, 9, n, 7))
        buf.write(b"rdkafka\x00")
        write(buf, request)
        payload = buf.getvalue()
        frames.append(_SIZE.pack(len(payload)) + payload)
    return frames


def _client(port: int, frames: list[bytes]) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = s.makefile("rb")
        waiting: deque[int] = deque()
        for frame in frames:
            if len(waiting) >= _IN_FLIGHT:
                _answer(reader, waiting.popleft())
            s.sendall(frame)
            waiting.append(_SIZE.unpack_from(frame, 8)[0])
        while waiting:
            _answer(reader, waiting.popleft())


def _answer(reader: Any, correlation: int) -> None:
    (size,) = _SIZE.unpack(reader.read(4))
    body = reader.read(size)
    got = _SIZE.unpack_from(body)[0]
    if got != correlation:
        raise RuntimeError(f"answer {got} where {correlation} was due")


async def _run(args: argparse.Namespace) -> None:
    topics = [f"t{i}" for i in range(args.topics)]
    with tempfile.TemporaryDirectory() as d:
        config = BrokerConfig(broker_properties(Path(d), 0, {"num.partitions": "4"}))
        broker = Broker(config)
        await broker.start()
        try:
            for topic in topics:
                broker.create_topic(topic, args.partitions, {})
            warm = -(-len(topics) * args.partitions // args.per_request)
            total = warm + args.requests * args.rounds
            frames = build_requests(
                topics, args.partitions, args.per_request, args.records, args.bytes, total
            )
            # Warm-up requests: every partition's first batch.
            await asyncio.to_thread(_client, broker.port, frames[:warm])
            shown = min(args.per_request, len(topics) * args.partitions)
            mb = shown * args.records * args.bytes * args.requests / 1e6
            for r in range(args.rounds):
                start = warm + r * args.requests
                chunk = frames[start : start + args.requests]
                if not chunk:
                    break
                before = time.thread_time()
                await asyncio.to_thread(_client, broker.port, chunk)
                cpu = time.thread_time() - before
                print(
                    json.dumps(
                        {
                            "bench": "produce_request",
                            "partitions_per_request": shown,
                            "records_per_batch": args.records,
                            "request_mb": round(mb / args.requests, 2),
                            "cpu_s_per_100mb": round(cpu / mb * 100, 3),
                            "ms_per_request": round(cpu / len(chunk) * 1000, 2),
                        }
                    ),
                    flush=True,
                )
            written = sum(
                broker.partitions.log(topic, p).log_end_offset
                for topic in topics
                for p in range(args.partitions)
            )
            if written != total * shown * args.records:
                raise RuntimeError(f"{written} records written, not {total * shown * args.records}")
        finally:
            await broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=21)
    ap.add_argument("--partitions", type=int, default=4, help="per topic")
    ap.add_argument("--per-request", type=int, default=1, help="partitions in a request")
    ap.add_argument("--records", type=int, default=1000, help="per batch")
    ap.add_argument("--bytes", type=int, default=1000, help="per record value")
    ap.add_argument("--requests", type=int, default=100, help="per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import uvloop

    uvloop.run(_run(args))


if __name__ == "__main__":
    main()
