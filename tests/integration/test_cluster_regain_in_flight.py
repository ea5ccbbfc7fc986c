"""A broker that stops serving its partitions for a moment (it cannot vouch
for its lease, say) and takes them up again under the same lease, while a
write of its own is still on its way to the store: it must not start the
partitions from a read of the store made before that write landed.

The write itself is acknowledged: it is in the store. And if the log started
from the older read, it would start from a stale end and a stale producer state:
the producer's next batch, in sequence after the one that landed, would be
answered OUT_OF_ORDER_SEQUENCE_NUMBER, which makes librdkafka bump its epoch
and send the landed batch again as new (a duplicate in the log).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from cluster_brokers import create_topic, fetch, leaders, produce_batch, wait_for
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol.types import ProducerId, i16
from kgroups.records.batch import encode_batch

from broker_thread import BrokerThread
from raw_wire import call_once

T = TypeVar("T")
RETRIABLE = {ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error}


def _producer_id(port: int) -> int:
    response = call_once(
        port,
        InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(timedelta(seconds=60)),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        ),
        timeout=20,
    )
    assert response.error_code == ErrorCode.none
    return int(response.producer_id)


class HeldWrites:
    """Holds the store writer's next transaction until released."""

    def __init__(self, run: Callable[[Callable[[Any], T]], Any]) -> None:
        self._run = run
        self.entered = threading.Event()
        self.release = threading.Event()
        self.armed = False

    async def run(self, work: Callable[[Any], T]) -> T:
        if self.armed:
            self.armed = False
            self.entered.set()
            await asyncio.to_thread(self.release.wait, 30)
        result: T = await self._run(work)
        return result


def test_a_partition_taken_up_again_waits_for_its_write_in_flight(
    tmp_path: Path, store_url: str
) -> None:
    broker = BrokerThread(
        tmp_path / "b1",
        cluster_store_url=store_url,
        broker_id=1,
        broker_heartbeat_interval_ms=500,
        broker_session_timeout_ms=6000,
    ).start()
    try:
        port = broker.port
        assert create_topic(port, "t", 1) == ErrorCode.none
        leaders(port, "t")
        pid = _producer_id(port)
        now = int(time.time() * 1000)

        def batch(sequence: int, value: bytes) -> bytes:
            return encode_batch(
                [(None, value, (), now)], producer_id=pid, producer_epoch=0, base_sequence=sequence
            )

        assert produce_batch(port, "t", 0, batch(0, b"a")) == (ErrorCode.none, 0)

        assert broker.broker is not None and broker.broker.cluster is not None
        member: Any = broker.broker.cluster
        home = member.home
        held = HeldWrites(home.writer.thread.run)
        home.writer.thread.run = held.run
        held.armed = True
        answers: list[tuple[ErrorCode, int]] = []
        sender = threading.Thread(
            target=lambda: answers.append(produce_batch(port, "t", 0, batch(1, b"b")))
        )
        sender.start()
        assert held.entered.wait(10), "the write never reached the store writer"
        # The broker stops serving the partition and takes it up again while
        # the write is on its way: the turn's read of the store comes first.
        broker.call(lambda: home.follow({}, {}))
        broker.run(member._turn())
        held.release.set()
        sender.join(30)
        # The write landed in the store: it is acknowledged, though the log it
        # was made in was given up meanwhile. NOT_LEADER_OR_FOLLOWER would tell
        # the client it was not written, and librdkafka would then reuse its
        # sequence numbers (after an abort, say): the next batch taken for this
        # one, a duplicate, and dropped.
        assert answers == [(ErrorCode.none, 1)]

        def settled(value: bytes, sequence: int) -> tuple[ErrorCode, int]:
            seen: list[tuple[ErrorCode, int]] = []

            def answered() -> bool:
                seen.append(produce_batch(port, "t", 0, batch(sequence, value)))
                assert seen[-1][0] in RETRIABLE | {ErrorCode.none}, seen[-1]
                return seen[-1][0] == ErrorCode.none

            wait_for(answered, 20)
            return seen[-1]

        # The next batch is in sequence after the one that landed; the retry
        # of the one that landed is a duplicate, answered with its offset.
        assert settled(b"c", 2) == (ErrorCode.none, 2)
        assert settled(b"b", 1) == (ErrorCode.none, 1)
        assert fetch(port, "t", 0, 0) == (ErrorCode.none, [b"a", b"b", b"c"])
    finally:
        broker.stop()
