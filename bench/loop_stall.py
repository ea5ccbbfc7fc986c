"""How long one huge but valid request keeps other clients waiting.

Against a `kgroups serve` subprocess, one connection sends a big request while
another sends ApiVersions back to back; the figure is the longest ApiVersions
round trip during the big request (the event loop's worst stall, as a client
sees it). Scenarios: CreateTopics of one 5,000-partition topic, DeleteTopics
of it, an OffsetCommit of hundreds of thousands of partitions (~18 MB), and a
Metadata request auto-creating 500 topics.

Prints one JSON object per scenario. Usage:

    .venv/bin/python bench/loop_stall.py [--partitions 5000] [--commit-partitions 600000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.offset_commit.v9 import OffsetCommitRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.static.primitive import i32Timedelta

from kgroups.client.connection import BrokerConnection
from kgroups.protocol.types import GroupId, TopicName, i16, i32, i64

_TIMEOUT = i32Timedelta.parse(timedelta(minutes=10))

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from process_broker import BrokerProcess  # noqa: E402
from raw_wire import read_frame  # noqa: E402


async def max_stall(port: int, big: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    """(longest ApiVersions round trip, duration of ``big``, its response), in seconds.

    The probe runs on a thread of its own with a blocking socket, so the time
    this process spends encoding the big request does not count.
    """
    done = threading.Event()
    worst = [0.0]
    body = struct.pack(">hhih", 18, 0, 7, 1) + b"p"

    def probe() -> None:
        with socket.create_connection(("127.0.0.1", port), 60) as s:
            while not done.is_set():
                started = time.perf_counter()
                s.sendall(struct.pack(">i", len(body)) + body)
                read_frame(s)
                worst[0] = max(worst[0], time.perf_counter() - started)
                time.sleep(0.002)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    await asyncio.sleep(0.2)
    started = time.perf_counter()
    try:
        result = await big()
    finally:
        elapsed = time.perf_counter() - started
        done.set()
        await asyncio.to_thread(thread.join)
    return worst[0], elapsed, result


def create_topics(name: str, partitions: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(name),
                num_partitions=i32(partitions),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=_TIMEOUT,
        validate_only=False,
    )


def offset_commit(partitions: int) -> OffsetCommitRequest:
    per_topic = 1000
    return OffsetCommitRequest(
        group_id=GroupId("big-commit"),
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=TopicName(f"topic-{t}"),
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=i32(p),
                        committed_offset=i64(p),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="some metadata",
                    )
                    for p in range(per_topic)
                ),
            )
            for t in range(partitions // per_topic)
        ),
    )


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        broker = BrokerProcess(Path(tmp) / "data", None, "socket.request.max.bytes=104857600")
        broker.start()
        try:
            conn = await BrokerConnection.open("127.0.0.1", broker.port)
            # Let the coordinator load before measuring anything.
            await asyncio.sleep(1.0)

            async def create() -> Any:
                return await conn.send(create_topics("big", args.partitions))

            async def delete() -> Any:
                return await conn.send(
                    DeleteTopicsRequest(
                        topics=(DeleteTopicState(name=TopicName("big"), topic_id=None),),
                        timeout=_TIMEOUT,
                    )
                )

            request = offset_commit(args.commit_partitions)

            async def commit() -> Any:
                return await conn.send(request)

            async def auto_create() -> Any:
                return await conn.send(
                    MetadataRequest(
                        topics=tuple(
                            MetadataRequestTopic(topic_id=None, name=TopicName(f"auto-{i}"))
                            for i in range(args.auto_topics)
                        ),
                        allow_auto_topic_creation=True,
                        include_topic_authorized_operations=False,
                    )
                )

            for name, big in (
                ("create_topics", create),
                ("delete_topics", delete),
                ("offset_commit", commit),
                ("metadata_auto_create", auto_create),
            ):
                worst, elapsed, _response = await max_stall(broker.port, big)
                print(
                    json.dumps(
                        {
                            "bench": "loop_stall",
                            "scenario": name,
                            "request_s": round(elapsed, 3),
                            "max_stall_ms": round(worst * 1000, 1),
                        }
                    ),
                    flush=True,
                )
            await conn.close()
        except Exception:
            print(broker.log_path.read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=5_000)
    parser.add_argument("--commit-partitions", type=int, default=600_000)
    parser.add_argument("--auto-topics", type=int, default=500)
    parser.add_argument("--dir", default=None, help="where the data directory goes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
