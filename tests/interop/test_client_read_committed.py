"""kgroups' own Consumer at isolation.level=read_committed reads a partition holding
a committed, an aborted and an open transaction (raw Produce + WriteTxnMarkers):
it gets the committed records only, in order, and its end offset is the last
stable offset; at read_uncommitted it gets every data record and the high watermark."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgroups.client import Consumer, ConsumerRecord, TopicPartition

from broker_thread import BrokerThread

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from test_transactions_wire import _create, produce, write_marker

pytestmark = pytest.mark.interop

A, B, C = 7100, 7101, 7102
TP = TopicPartition("t", 0)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """Transactions written as a coordinator elsewhere would: with producer ids this
    broker's own coordinator did not hand out, so it must not verify them."""
    b = BrokerThread(
        tmp_path / "data", **{"transaction.partition.verification.enable": "false"}
    ).start()
    try:
        yield b
    finally:
        b.stop()


def _consume(bootstrap: str, isolation: str, expected: int) -> tuple[list[ConsumerRecord], int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "isolation.level": isolation, "fetch.max.wait.ms": 50}
    )
    try:
        consumer.assign([TP])
        consumer.seek_to_beginning([TP])
        records: list[ConsumerRecord] = []
        deadline = time.monotonic() + 20
        while len(records) < expected and time.monotonic() < deadline:
            records += consumer.poll(0.2)
        # Nothing more comes: the open transaction stays hidden at read_committed.
        end = time.monotonic() + 1
        while time.monotonic() < end:
            records += consumer.poll(0.2)
        return records, consumer.end_offsets([TP])[TP]
    finally:
        consumer.close()


def test_read_committed_consumer_gets_committed_records_only(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    assert produce(port, [b"before"]) == 0  # offset 0
    assert produce(port, [b"a1", b"a2"], pid=A, seq=0, txn_id="ta") == 0  # 1-2
    assert produce(port, [b"b1", b"b2"], pid=B, seq=0, txn_id="tb") == 0  # 3-4
    assert produce(port, [b"a3"], pid=A, seq=2, txn_id="ta") == 0  # 5
    assert write_marker(port, B, commit=False) == 0  # 6
    assert write_marker(port, A, commit=True) == 0  # 7
    assert produce(port, [b"after"]) == 0  # 8
    assert produce(port, [b"c1"], pid=C, seq=0, txn_id="tc") == 0  # 9, stays open
    assert produce(port, [b"hidden"]) == 0  # 10

    committed, lso = _consume(broker.bootstrap, "read_committed", 5)
    assert [r.value for r in committed] == [b"before", b"a1", b"a2", b"a3", b"after"]
    assert [r.offset for r in committed] == [0, 1, 2, 5, 8]
    assert lso == 9

    everything, high_watermark = _consume(broker.bootstrap, "read_uncommitted", 9)
    assert [r.value for r in everything] == [
        b"before",
        b"a1",
        b"a2",
        b"b1",
        b"b2",
        b"a3",
        b"after",
        b"c1",
        b"hidden",
    ]
    assert high_watermark == 11
