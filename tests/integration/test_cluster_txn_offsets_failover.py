"""Offsets sent to a transaction survive the loss of the group's coordinator
between the commit and its marker: the broker that takes the
`__consumer_offsets` partition over loads the pending offsets, the marker
reaches it, and the group's committed offsets are the transaction's, never
the ones before it (exactly-once: a consumer restarting from them must not
process the transaction's input again)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, leaders, running_cluster, wait_for
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from raw_wire import call_once

pytestmark = pytest.mark.interop

PARTITIONS = 3
FAST_PEERS = "request.timeout.ms=2000"


def _coordinator(port: int, key_type: int, key: str) -> int:
    found: list[int] = []

    def known() -> bool:
        answer = call_once(
            port, FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=(key,))
        )
        (coordinator,) = answer.coordinators
        found[:] = [coordinator.node_id]
        return bool(coordinator.error_code == ErrorCode.none)

    wait_for(known, timeout=30)
    return found[0]


def _consume(consumer: Any, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 60
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} inputs"
        got += [m for m in consumer.consume(count - len(got), 1) if m.error() is None]
    return got


def _transform(producer: Any, consumer: Any, batch: list[Any]) -> None:
    from confluent_kafka import TopicPartition

    producer.begin_transaction()
    for m in batch:
        producer.produce("out", m.value() + b"-out", partition=m.partition())
    ends: dict[int, int] = {}
    for m in batch:
        ends[m.partition()] = max(ends.get(m.partition(), 0), m.offset() + 1)
    producer.send_offsets_to_transaction(
        [TopicPartition("in", p, o) for p, o in ends.items()],
        consumer.consumer_group_metadata(),
        30,
    )


def _commit(producer: Any) -> None:
    """commit_transaction, called again while it times out (a coordinator
    stopped with it makes the client wait for its socket timeout)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + 90
    while True:
        try:
            producer.commit_transaction(30)
            return
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise


@pytest.mark.parametrize("same_coordinator", [False, True], ids=["apart", "together"])
def test_transactional_offsets_outlive_the_group_coordinator(
    tmp_path: Path, store_url: str, same_coordinator: bool
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    with running_cluster(tmp_path, store_url, 3, FAST_PEERS) as brokers:
        port = brokers[0].port
        for topic in ("in", "out"):
            assert create_topic(port, topic, PARTITIONS) == ErrorCode.none
            leaders(port, topic)
        bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
        group = "eo"
        node = _coordinator(port, 0, group)
        # A transactional id coordinated elsewhere (the marker has to travel)
        # or by the same broker (written in process; both coordinators move).
        txn_id = next(
            f"eo-{i}"
            for i in range(100)
            if (_coordinator(port, 1, f"eo-{i}") == node) == same_coordinator
        )
        plain = Producer({"bootstrap.servers": bootstrap})
        for i in range(60):
            plain.produce("in", f"in-{i}".encode(), partition=i % PARTITIONS)
        assert plain.flush(30) == 0
        producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "socket.timeout.ms": 10000}
        )
        producer.init_transactions(60)
        settings = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "max.poll.interval.ms": 20000,
            "session.timeout.ms": 6000,
            "socket.timeout.ms": 10000,
        }
        consumer = Consumer(settings)
        consumer.subscribe(["in"])
        _transform(producer, consumer, _consume(consumer, 30))
        producer.commit_transaction(60)

        _transform(producer, consumer, _consume(consumer, 30))
        victim = brokers[node - 1]
        assert victim.proc is not None
        os.kill(victim.proc.pid, signal.SIGSTOP)
        try:
            _commit(producer)  # answered once PrepareCommit is stored
        finally:
            victim.kill()
        consumer.close()

        others = [b for b in brokers if b is not victim]
        live = ",".join(f"127.0.0.1:{b.port}" for b in others)
        wait_for(lambda: _coordinator(others[0].port, 0, group) != node, timeout=30)
        fresh = Consumer({**settings, "bootstrap.servers": live})
        try:
            parts = [TopicPartition("in", p) for p in range(PARTITIONS)]
            committed = fresh.committed(parts, 60)
            assert sorted(tp.offset for tp in committed) == [20] * PARTITIONS
        finally:
            fresh.close()
