"""Offsets sent to a transaction while the group's coordinator is cut from
the store: its write of them fails once another broker has taken the group
over, and the client must hear so, send them again to the new coordinator,
and commit the transaction with them. Were the old coordinator's OK to
stand, the transaction would commit its outputs without its offsets, and a
consumer restarting from the group's offsets would process its input again.

Two brokers on one PostgreSQL; broker 1, the group's coordinator, reaches it
through a TCP proxy that the test cuts (silence) while the offsets are sent,
and heals once broker 2 coordinates the group. The transaction's coordinator
and its output partition are broker 2's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from cluster_brokers import HEARTBEAT_MS, cluster_broker, create_topic, leaders, metadata, wait_for
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.static.primitive import i8
from tcp_proxy import TcpProxy

from kgroups.errors import ErrorCode

from raw_wire import call_once

INPUTS = 10
_OVERRIDES = ("group.initial.rebalance.delay.ms=0",)


def _through(proxy: TcpProxy, url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) > 1 else host))


def _coordinator(port: int, key_type: int, key: str) -> int:
    """The broker id FindCoordinator names, or -1 when it names none."""
    try:
        response = call_once(
            port,
            FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=(key,)),
            timeout=10,
        )
    except (OSError, TimeoutError):
        return -1
    (found,) = response.coordinators
    return int(found.node_id) if found.error_code == ErrorCode.none else -1


def _key_of(ports: tuple[int, int], key_type: int, broker_id: int, prefix: str) -> str:
    """A group or transactional id both brokers name ``broker_id`` the coordinator of."""
    for i in range(200):
        key = f"{prefix}-{i}"
        wait_for(lambda k=key: len({_coordinator(p, key_type, k) for p in ports} - {-1}) == 1)
        if _coordinator(ports[0], key_type, key) == broker_id:
            return key
    raise AssertionError(f"no {prefix} of broker {broker_id}")


def _consume(consumer: Consumer, count: int) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + 30
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} inputs"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message)
    return got


def test_offsets_a_cut_off_coordinator_failed_to_store_commit_with_the_transaction(
    tmp_path: Path, store_url: str
) -> None:
    store = urlsplit(store_url)
    with TcpProxy(store.hostname or "127.0.0.1", store.port or 5432) as proxy:
        b1 = cluster_broker(tmp_path, _through(proxy, store_url), 1, *_OVERRIDES)
        b2 = cluster_broker(tmp_path, store_url, 2, *_OVERRIDES)
        try:
            b1.start()
            b2.start()
            wait_for(lambda: len(metadata(b1.port).brokers) == 2)
            time.sleep(3 * HEARTBEAT_MS / 1000)  # the spread of leaders settles
            ports = (b1.port, b2.port)
            group = _key_of(ports, 0, 1, "eo")
            txn_id = _key_of(ports, 1, 2, "eo-txn")
            assert create_topic(b2.port, "in", 1) == ErrorCode.none
            assert create_topic(b2.port, "out", 2) == ErrorCode.none
            time.sleep(3 * HEARTBEAT_MS / 1000)  # the new topics' leaders settle too
            in_leader = leaders(b2.port, "in")[0]
            out_partition = next(p for p, node in leaders(b2.port, "out").items() if node == 2)
            bootstrap = f"127.0.0.1:{b1.port},127.0.0.1:{b2.port}"
            plain = Producer({"bootstrap.servers": f"127.0.0.1:{ports[in_leader - 1]}"})
            for i in range(INPUTS):
                plain.produce("in", f"in-{i}".encode(), partition=0)
            assert plain.flush(30) == 0
            settings = {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "session.timeout.ms": 30000,
                "max.poll.interval.ms": 60000,
            }
            consumer = Consumer(settings)
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
            producer.init_transactions(30)
            consumer.subscribe(["in"])
            inputs = _consume(consumer, INPUTS)
            producer.begin_transaction()
            for m in inputs:
                producer.produce("out", m.value() + b"-out", partition=out_partition)
            assert producer.flush(30) == 0

            proxy.cut()
            sent: list[BaseException | None] = []

            def send_offsets() -> None:
                try:
                    producer.send_offsets_to_transaction(
                        [TopicPartition("in", 0, INPUTS)], consumer.consumer_group_metadata(), 60
                    )
                    sent.append(None)
                except BaseException as e:  # reported by the main thread
                    sent.append(e)

            sending = threading.Thread(target=send_offsets)
            sending.start()
            try:
                # Broker 1 steps down and broker 2 takes the group over.
                wait_for(lambda: _coordinator(b2.port, 0, group) == 2, timeout=30)
            finally:
                proxy.heal()
            sending.join(60)
            assert sent == [None]
            producer.commit_transaction(60)
            consumer.close()

            fresh = Consumer({**settings, "bootstrap.servers": f"127.0.0.1:{b2.port}"})
            try:
                (committed,) = fresh.committed([TopicPartition("in", 0)], 30)
                assert committed.offset == INPUTS
            finally:
                fresh.close()
        finally:
            proxy.heal()
            b1.stop()
            b2.stop()
