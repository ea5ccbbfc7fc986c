"""Transactions across the brokers of a cluster, with the transactional
producers of confluent-kafka, kafka-python and aiokafka: each transaction
spans partitions led by every broker, its coordinator is the leader of its
`__transaction_state` partition, markers reach the other brokers' partitions,
and read_committed consumers see exactly the committed records. A
coordinator killed mid-transaction and a partition leader killed between
PrepareCommit and its marker lose nothing and commit nothing twice."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, leaders, running_cluster, wait_for
from kio.schema.describe_transactions.v0 import DescribeTransactionsRequest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.types import TransactionalId

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from process_broker import BrokerProcess
from raw_wire import call_once

pytestmark = pytest.mark.interop

PARTITIONS = 3
# Markers to a stopped broker are sent again after this long.
FAST_PEERS = "request.timeout.ms=2000"


def _bootstrap(brokers: list[BrokerProcess]) -> str:
    return ",".join(f"127.0.0.1:{b.port}" for b in brokers)


def _coordinator(port: int, transactional_id: str) -> int:
    """The broker id of the transactional id's coordinator, once there is one."""
    found: list[int] = []

    def known() -> bool:
        answer = call_once(
            port,
            FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(transactional_id,)),
        )
        (coordinator,) = answer.coordinators
        found[:] = [coordinator.node_id]
        return bool(coordinator.error_code == ErrorCode.none)

    wait_for(known, timeout=30)
    return found[0]


def _state(brokers: list[BrokerProcess], transactional_id: str) -> str:
    """The transaction's state as its coordinator, one of ``brokers``, describes it."""
    node = _coordinator(brokers[0].port, transactional_id)
    (coordinator,) = (b for b in brokers if b.properties["broker.id"] == str(node))
    answer = call_once(
        coordinator.port,
        DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),)),
    )
    (described,) = answer.transaction_states
    assert described.error_code == ErrorCode.none
    return str(described.transaction_state)


def _confluent_producer(bootstrap: str, transactional_id: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(60)
    return producer


def _confluent_round(bootstrap: str) -> None:
    producer = _confluent_producer(bootstrap, "confluent")
    producer.begin_transaction()
    for p in range(PARTITIONS):
        producer.produce("t", f"confluent-{p}".encode(), partition=p)
    producer.commit_transaction(60)
    producer.begin_transaction()
    for p in range(PARTITIONS):
        producer.produce("t", b"aborted", partition=p)
    producer.flush(30)
    producer.abort_transaction(60)


def _kafka_python_round(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafka-python")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for p in range(PARTITIONS):
            producer.send("t", f"kafka-python-{p}".encode(), partition=p)
        producer.commit_transaction()
        producer.begin_transaction()
        for p in range(PARTITIONS):
            producer.send("t", b"aborted", partition=p)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()


async def _aiokafka_round(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aiokafka")
    await producer.start()
    try:
        async with producer.transaction():
            for p in range(PARTITIONS):
                await producer.send_and_wait("t", f"aiokafka-{p}".encode(), partition=p)
        await producer.begin_transaction()
        for p in range(PARTITIONS):
            await producer.send_and_wait("t", b"aborted", partition=p)
        await producer.abort_transaction()
    finally:
        await producer.stop()


def _read(bootstrap: str, topic: str, expected: int, isolation: str) -> list[bytes]:
    """Every record of the topic a consumer gets, waiting for ``expected``
    and then a little longer for any that should not come."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        quiet_until = None
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) >= expected:
                quiet_until = quiet_until or time.monotonic() + 1
                if time.monotonic() > quiet_until:
                    break
        return values
    finally:
        consumer.close()


def test_transactions_of_three_clients_span_every_broker(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 3) as brokers:
        port = brokers[0].port
        assert create_topic(port, "t", PARTITIONS) == ErrorCode.none
        assert set(leaders(port, "t").values()) == {1, 2, 3}
        bootstrap = _bootstrap(brokers)
        _confluent_round(bootstrap)
        _kafka_python_round(bootstrap)
        asyncio.run(_aiokafka_round(bootstrap))

        committed = _read(bootstrap, "t", 9, "read_committed")
        assert sorted(committed) == sorted(
            f"{client}-{p}".encode()
            for client in ("confluent", "kafka-python", "aiokafka")
            for p in range(PARTITIONS)
        )
        everything = _read(bootstrap, "t", 18, "read_uncommitted")
        assert everything.count(b"aborted") == 9
        for txn_id in ("confluent", "kafka-python", "aiokafka"):
            assert _state(brokers, txn_id) == "CompleteAbort"


def test_offsets_sent_to_a_transaction_commit_with_it(tmp_path: Path, store_url: str) -> None:
    """Consume, transform, produce: the group's offsets, kept by its
    coordinator on one broker, commit with the output of a transaction
    coordinated on another (KIP-447's generation checks included)."""
    from confluent_kafka import Consumer, Producer

    with running_cluster(tmp_path, store_url, 3) as brokers:
        port = brokers[0].port
        for topic in ("in", "t"):
            assert create_topic(port, topic, PARTITIONS) == ErrorCode.none
            leaders(port, topic)
        bootstrap = _bootstrap(brokers)
        plain = Producer({"bootstrap.servers": bootstrap})
        for i in range(30):
            plain.produce("in", f"in-{i}".encode(), partition=i % PARTITIONS)
        assert plain.flush(30) == 0
        producer = _confluent_producer(bootstrap, "transform")
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "transformers",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        try:
            consumer.subscribe(["in"])
            seen = 0
            deadline = time.monotonic() + 60
            while seen < 30 and time.monotonic() < deadline:
                messages = consumer.consume(30, 1)
                messages = [m for m in messages if m.error() is None]
                if not messages:
                    continue
                producer.begin_transaction()
                for m in messages:
                    producer.produce("t", m.value().replace(b"in", b"out"), partition=m.partition())
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()), consumer.consumer_group_metadata()
                )
                producer.commit_transaction(60)
                seen += len(messages)
            assert seen == 30
            committed = consumer.committed(consumer.assignment(), 30)
            assert sum(tp.offset for tp in committed) == 30
        finally:
            consumer.close()
        outputs = _read(bootstrap, "t", 30, "read_committed")
        assert sorted(outputs) == sorted(f"out-{i}".encode() for i in range(30))


def test_a_coordinator_killed_mid_transaction_is_replaced(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 3, FAST_PEERS) as brokers:
        port = brokers[0].port
        assert create_topic(port, "t", PARTITIONS) == ErrorCode.none
        leaders(port, "t")
        bootstrap = _bootstrap(brokers)
        producer = _confluent_producer(bootstrap, "survivor")
        producer.begin_transaction()
        for p in range(PARTITIONS):
            producer.produce("t", f"before-{p}".encode(), partition=p)
        assert producer.flush(30) == 0
        victim = brokers[_coordinator(port, "survivor") - 1]
        victim.kill()
        for p in range(PARTITIONS):
            producer.produce("t", f"after-{p}".encode(), partition=p)
        producer.commit_transaction(60)
        live = _bootstrap([b for b in brokers if b is not victim])
        committed = _read(live, "t", 2 * PARTITIONS, "read_committed")
        assert sorted(committed) == sorted(
            f"{when}-{p}".encode() for when in ("before", "after") for p in range(PARTITIONS)
        )
        others = [b for b in brokers if b is not victim]
        assert _coordinator(others[0].port, "survivor") != int(victim.properties["broker.id"])


def test_a_leader_killed_before_its_marker_gets_it_from_its_successor(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 3, FAST_PEERS) as brokers:
        port = brokers[0].port
        assert create_topic(port, "t", PARTITIONS) == ErrorCode.none
        led_by = leaders(port, "t")
        bootstrap = _bootstrap(brokers)
        producer = _confluent_producer(bootstrap, "marked")
        coordinator = _coordinator(port, "marked")
        # A partition led by another broker than the coordinator: its marker
        # has to travel, and its leader dies before it arrives.
        partition, node = next((p, n) for p, n in sorted(led_by.items()) if n != coordinator)
        victim = brokers[node - 1]
        producer.begin_transaction()
        for p in range(PARTITIONS):
            producer.produce("t", f"marked-{p}".encode(), partition=p)
        assert producer.flush(30) == 0
        assert victim.proc is not None
        os.kill(victim.proc.pid, signal.SIGSTOP)
        others = [b for b in brokers if b is not victim]
        try:
            producer.commit_transaction(60)  # answered once PrepareCommit is stored
            assert _state(others, "marked") == "PrepareCommit"
        finally:
            victim.kill()
        wait_for(lambda: _state(others, "marked") == "CompleteCommit", timeout=60)
        committed = _read(_bootstrap(others), "t", PARTITIONS, "read_committed")
        assert sorted(committed) == sorted(f"marked-{p}".encode() for p in range(PARTITIONS))
        assert leaders(others[0].port, "t")[partition] != node
