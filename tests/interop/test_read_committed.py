"""A confluent-kafka consumer at isolation.level=read_committed reads a partition
holding a committed and an aborted transaction (written with raw Produce and
WriteTxnMarkers) and an open one: it gets the committed records only."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_thread import BrokerThread

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from test_transactions_wire import UNVERIFIED, _create, produce, write_marker

pytestmark = pytest.mark.interop

A, B, C = 7000, 7001, 7002


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """Transactions written as a coordinator elsewhere would: not verified here."""
    b = BrokerThread(tmp_path / "data", **UNVERIFIED).start()
    try:
        yield b
    finally:
        b.stop()


def _consume(bootstrap: str, isolation: str, expected: int) -> list[bytes]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        # Nothing more comes (the open transaction stays hidden at read_committed).
        end = time.monotonic() + 1
        while time.monotonic() < end:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


def test_read_committed_consumer_skips_aborted_and_open_transactions(
    broker: BrokerThread,
) -> None:
    port = broker.port
    _create(port)
    assert produce(port, [b"before"]) == 0
    assert produce(port, [b"a1", b"a2"], pid=A, seq=0, txn_id="ta") == 0
    assert produce(port, [b"b1", b"b2"], pid=B, seq=0, txn_id="tb") == 0
    assert produce(port, [b"a3"], pid=A, seq=2, txn_id="ta") == 0
    assert write_marker(port, B, commit=False) == 0
    assert write_marker(port, A, commit=True) == 0
    assert produce(port, [b"after"]) == 0
    assert produce(port, [b"c1"], pid=C, seq=0, txn_id="tc") == 0
    assert produce(port, [b"hidden"]) == 0  # past the open transaction: not stable yet

    committed = _consume(broker.bootstrap, "read_committed", 5)
    assert committed == [b"before", b"a1", b"a2", b"a3", b"after"]
    uncommitted = _consume(broker.bootstrap, "read_uncommitted", 9)
    assert uncommitted == [b"before", b"a1", b"a2", b"b1", b"b2", b"a3", b"after", b"c1", b"hidden"]
