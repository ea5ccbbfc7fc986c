"""SIGTERM stops the broker cleanly: in-flight requests answered, logs closed."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from pathlib import Path

from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from kgroups.cli import main
from kgroups.client.connection import BrokerConnection

from process_broker import BrokerProcess


def test_sigterm_answers_a_parked_fetch_and_exits_cleanly(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        assert main(["topics", "create", "t", "--bootstrap-server", broker.bootstrap]) == 0

        async def parked_fetch() -> tuple[int, float]:
            conn = await BrokerConnection.open("127.0.0.1", broker.port)
            request = FetchRequest(
                replica_id=BrokerId(-1),
                max_wait=i32Timedelta.parse(timedelta(seconds=30)),
                min_bytes=i32(1),
                isolation_level=i8(0),
                topics=(
                    FetchTopic(
                        topic=TopicName("t"),
                        partitions=(
                            FetchPartition(
                                partition=i32(0),
                                fetch_offset=i64(0),
                                partition_max_bytes=i32(1 << 20),
                            ),
                        ),
                    ),
                ),
                forgotten_topics_data=(),
            )
            started = time.monotonic()
            waiting = asyncio.ensure_future(conn.send(request))
            await asyncio.sleep(0.5)  # the fetch is parked: no data, 30 s max wait
            assert not waiting.done()
            assert broker.proc is not None
            broker.proc.terminate()
            response = await waiting
            await conn.close()
            return response.responses[0].partitions[0].error_code, time.monotonic() - started

        error, elapsed = asyncio.run(parked_fetch())
        assert error == 0 and elapsed < 10
        assert broker.proc is not None and broker.proc.wait(15) == 0
        assert (tmp_path / "data" / "cleanly_shutdown").exists()
    finally:
        broker.stop()
