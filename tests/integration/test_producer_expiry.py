"""Idle idempotent producers are forgotten after producer.id.expiration.ms.

With an injected clock: a producer's state (and so its sequence checks) lasts
until its last batch is older than the expiration; then the periodic check
drops it, however many producer ids a client invented, and a restart does not
bring them back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import cast

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records, i32Timedelta

from kgroups.clock import ManualClock
from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch

from broker_thread import BrokerThread
from raw_wire import call_once

NOW = 1_700_000_000_000
HOUR_MS = 3_600_000
TIMEOUT = i32Timedelta.parse(timedelta(seconds=10))


def _produce(port: int, producer_id: int, sequence: int, timestamp: int) -> ErrorCode:
    batch = encode_batch(
        [(b"k", b"v", (), timestamp)],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
    )
    request = ProduceRequest(
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
    error: ErrorCode = call_once(port, request).responses[0].partition_responses[0].error_code
    return error


def _wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _start(data: Path, clock: ManualClock) -> BrokerThread:
    return BrokerThread(
        data,
        clock,
        producer_id_expiration_ms=HOUR_MS,
        producer_id_expiration_check_interval_ms=50,
    ).start()


def test_idle_producers_expire(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    broker = _start(tmp_path / "data", clock)
    try:
        assert broker.broker is not None
        port = broker.broker.port
        topic = CreatableTopic(
            name=TopicName("t"),
            num_partitions=i32(1),
            replication_factor=i16(1),
            assignments=(),
            configs=(),
        )
        created = call_once(
            port, CreateTopicsRequest(topics=(topic,), timeout=TIMEOUT, validate_only=False)
        )
        assert created.topics[0].error_code == ErrorCode.none
        plog = broker.broker.partitions.log("t", 0)

        # A client inventing a producer id per request, and one regular producer.
        for pid in range(100, 200):
            assert _produce(port, pid, 0, NOW) == ErrorCode.none
        assert _produce(port, 7, 0, NOW) == ErrorCode.none
        assert _produce(port, 7, 1, NOW + HOUR_MS - 1000) == ErrorCode.none
        assert _produce(port, 7, 5, NOW) == ErrorCode.out_of_order_sequence_number

        # The producers of the first batches go one hour after them; producer 7
        # wrote since, so it stays and keeps its sequence checks.
        clock.advance(HOUR_MS)
        _wait_for(lambda: len(plog.producers) == 1)
        time.sleep(0.2)  # a few more checks: producer 7 is still not due
        assert broker.call(lambda: sorted(plog.producers.producers)) == [7]
        assert _produce(port, 7, 5, NOW) == ErrorCode.out_of_order_sequence_number

        clock.advance(HOUR_MS)
        _wait_for(lambda: len(plog.producers) == 0)
        # Forgotten: a producer id unknown again may start at any sequence.
        assert _produce(port, 7, 5, clock.now_ms()) == ErrorCode.none
    finally:
        broker.stop()

    # The restart reads the pruned snapshot written at shutdown: only producer 7
    # (written after the expiry) is known.
    broker = _start(tmp_path / "data", clock)
    try:
        assert broker.broker is not None
        plog = broker.broker.partitions.log("t", 0)
        assert broker.call(lambda: sorted(plog.producers.producers)) == [7]
    finally:
        broker.stop()
