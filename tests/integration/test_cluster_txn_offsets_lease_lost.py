"""Offsets sent to a transaction while the group's coordinator gives up its
partition (it lost its lease) with their write on its way to the store, which
then fails: the member must be told, as for any failed write, or the
transaction commits without its offsets and its input is processed again."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cluster_brokers import wait_for
from txn_offsets_wire import create_topic, fetch, find_coordinator, txn_commit

from kgroups.errors import ErrorCode
from kgroups.postgres_store.errors import StoreUnavailable

from broker_thread import BrokerThread

T = TypeVar("T")
PRODUCER = 7


class FailingWrites:
    """Holds the store writer's next transaction, then fails it as a store
    whose answer was lost."""

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
            raise StoreUnavailable("the connection was lost")
        result: T = await self._run(work)
        return result


def test_offsets_whose_write_fails_after_the_partition_is_given_up_are_not_acknowledged(
    tmp_path: Path, store_url: str
) -> None:
    broker = BrokerThread(
        tmp_path / "b1",
        cluster_store_url=store_url,
        broker_id=1,
        broker_heartbeat_interval_ms=500,
        broker_session_timeout_ms=6000,
        offsets_topic_num_partitions=1,
        transaction_partition_verification_enable=False,
    ).start()
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            create_topic(s, "in", 1)
            wait_for(lambda: _found(s))
            assert broker.broker is not None and broker.broker.cluster is not None
            member: Any = broker.broker.cluster
            home = member.home
            failing = FailingWrites(home.writer.thread.run)
            home.writer.thread.run = failing.run
            failing.armed = True
            answers: dict[int, dict[tuple[str, int], ErrorCode]] = {}

            def send(producer_id: int, offset: int) -> threading.Thread:
                def commit() -> None:
                    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as c:
                        answers[producer_id] = txn_commit(
                            c, "g", {("in", 0): offset}, producer_id=producer_id
                        )

                thread = threading.Thread(target=commit)
                thread.start()
                return thread

            first = send(PRODUCER, 10)
            assert failing.entered.wait(10), "the offsets never reached the store writer"
            # Another producer's offsets, appended behind them meanwhile.
            second = send(PRODUCER + 1, 20)
            wait_for(
                lambda: broker.call(
                    lambda: bool(
                        home.logs.get(("__consumer_offsets", 0))
                        and home.logs[("__consumer_offsets", 0)]._pending
                    )
                )
            )
            # The broker gives its partitions up (its lease could not be
            # renewed), then the write fails.
            broker.call(lambda: home.follow({}, {}))
            failing.release.set()
            first.join(30)
            second.join(30)
            assert answers[PRODUCER][("in", 0)] is not ErrorCode.none, answers
            assert answers[PRODUCER + 1][("in", 0)] is not ErrorCode.none, answers
            # Nothing is pending once the coordinator is back: the client sends
            # the offsets again, and they are what the transaction commits.
            wait_for(lambda: _stable(s))
    finally:
        broker.stop()


def _found(s: socket.socket) -> bool:
    try:
        find_coordinator(s, "g")
    except AssertionError:
        return False
    return True


def _stable(s: socket.socket) -> bool:
    error, offsets = fetch(s, "g", {"in": [0]}, require_stable=True)
    return error is ErrorCode.none and offsets == {("in", 0): (-1, ErrorCode.none)}
