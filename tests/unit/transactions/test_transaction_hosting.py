"""The transaction coordinator fits the group coordinator's shell: replayed
state equals live state, and CoordinatorDriver drives the shard."""

from __future__ import annotations

import random

from kgroups.coordinator.context import RequestContext
from kgroups.errors import ErrorCode
from kgroups.runtime.coordinator_driver import CoordinatorDriver
from kgroups.transactions.config import TransactionConfig
from kgroups.transactions.messages import (
    InitProducerId,
    InitProducerIdAnswer,
)
from kgroups.transactions.result import TxnMarkers, by_leader
from kgroups.transactions.shard import TransactionCoordinatorShard
from kgroups.transactions.state import TxnMetadata

from .harness import Coordinator


def stored(meta: TxnMetadata) -> tuple[object, ...]:
    """What a v0 record keeps of an id's state."""
    return (
        meta.transactional_id,
        meta.producer_id,
        meta.producer_epoch,
        meta.timeout_ms,
        meta.state,
        meta.partitions,
        meta.start_ms,
        meta.last_update_ms,
    )


def test_a_reloaded_coordinator_has_the_state_the_live_one_had() -> None:
    rng = random.Random(7)
    coord = Coordinator()
    ids = [f"tx-{i}" for i in range(6)]
    producers: dict[str, InitProducerIdAnswer] = {}
    for _ in range(400):
        txn_id = rng.choice(ids)
        coord.now += rng.randrange(0, 3000)
        action = rng.randrange(5)
        producer = producers.get(txn_id)
        if action == 0 or producer is None:
            answer = coord.init(txn_id, timeout_ms=rng.choice((5000, 60000)))
            if answer is not None and answer.error is ErrorCode.none:
                producers[txn_id] = answer
        elif action == 1:
            coord.add(txn_id, producer, ("t", rng.randrange(4)))
        elif action == 2:
            coord.end(txn_id, producer, commit=rng.random() < 0.5)
        elif action == 3:
            coord.complete_markers()
        else:
            coord.advance(rng.randrange(0, 20000))
    live = sorted(stored(m) for m in coord.shard.transactions())
    loaded = coord.reload()
    assert sorted(stored(m) for m in loaded.shard.transactions()) == live
    assert len(live) == len(ids)


def test_markers_are_grouped_by_the_leader_of_their_partitions() -> None:
    markers = TxnMarkers("tx", 5, 1, 3, True, frozenset({("a", 0), ("a", 1), ("b", 0)}))
    grouped = by_leader([markers], lambda tp: 1 if tp == ("a", 1) else 2)
    assert {leader: [m.partitions for m in ms] for leader, ms in grouped.items()} == {
        1: [{("a", 1)}],
        2: [{("a", 0), ("b", 0)}],
    }
    assert grouped[1][0].producer_id == 5 and grouped[1][0].coordinator_epoch == 3


def test_the_group_coordinators_driver_drives_the_transaction_shard() -> None:
    ids = iter(range(100, 200))
    shard = TransactionCoordinatorShard(
        0, TransactionConfig(), coordinator_epoch=1, next_producer_id=lambda: next(ids)
    )
    driver = CoordinatorDriver(shard, commit_timeout_ms=5000)  # type: ignore[arg-type]
    now = 1000

    def init(reply_to: str) -> None:
        ctx = RequestContext(5, "c", "/127.0.0.1", reply_to=reply_to)
        driver.submit(shard.init_producer_id(InitProducerId("tx", 60000), ctx, now), now)  # type: ignore[arg-type]

    init("first")
    assert driver.take_replies() == []  # not before its record is durable
    (append,) = driver.appends
    driver.appends.clear()
    driver.durable(append, now)
    assert driver.take_replies() == [("first", InitProducerIdAnswer(ErrorCode.none, 100, 0))]
    init("second")
    (append,) = driver.appends
    driver.appends.clear()
    driver.failed(append, ErrorCode.not_leader_or_follower, now)
    assert driver.take_replies() == [("second", InitProducerIdAnswer(ErrorCode.not_coordinator))]
    assert driver.next_deadline_ms() == now + 10000  # the timed-out transactions check
    driver.on_clock(now + 10000)
    assert driver.next_deadline_ms() == now + 20000
