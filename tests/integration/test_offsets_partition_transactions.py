"""Transactions that carry offsets end on `__consumer_offsets` as on any
partition: their markers close the transaction in the partition's producer
state, so its last stable offset catches up with the high watermark, aborted
offsets go into the aborted-transaction index, and the cleaner, which stops
at the last stable offset, keeps compacting the partition."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from txn_offsets_wire import create_topic, fetch, find_coordinator, txn_commit

from kgroups.client import ConsumerGroupMetadata, OffsetAndMetadata, Producer, TopicPartition
from kgroups.client.admin import Admin
from kgroups.coordinator.records import decode_offset_commit_value, encode_offset_commit_key
from kgroups.errors import ErrorCode
from kgroups.partitions.log import PartitionLog
from kgroups.records.batch import iter_batches, iter_key_values
from kgroups.storage.log import SegmentLog
from kgroups.topics.placement import OFFSETS_TOPIC

from broker_thread import BrokerThread

IN = "in"
GROUP = "g"
PID = 7000
OK = ErrorCode.none
UNSTABLE = ErrorCode.unstable_offset_commit
# One offsets partition, small segments that close every few transactions,
# and a cleaner that looks often and finds any dirty part worth cleaning
# (with Kafka's 0.5, a round run midway leaves the rest below the ratio).
SETTINGS = {
    "offsets_topic_num_partitions": 1,
    "offsets_topic_segment_bytes": 1024,
    "log_cleaner_backoff_ms": 100,
    "log_cleaner_min_cleanable_ratio": "0.01",
    # Producer ids no transaction coordinator knows: nothing to verify them with.
    "transaction_partition_verification_enable": "false",
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    broker = BrokerThread(tmp_path / "data", **SETTINGS).start()
    try:
        yield broker
    finally:
        broker.stop()


def offsets_log(broker: BrokerThread) -> PartitionLog:
    assert broker.broker is not None
    return broker.broker.partitions.log(OFFSETS_TOPIC, 0)


def stable_and_high(broker: BrokerThread) -> tuple[int, int]:
    def read() -> tuple[int, int]:
        plog = offsets_log(broker)
        return plog.last_stable_offset, plog.high_watermark

    return broker.call(read)


def offsets_below_active_segment(broker: BrokerThread) -> dict[int, list[int]]:
    """Per input partition, the offsets its records in the closed segments
    hold, in log order (what the cleaner compacts)."""

    def read() -> dict[int, list[int]]:
        plog = offsets_log(broker)
        assert isinstance(plog, SegmentLog)
        keys = {encode_offset_commit_key(GROUP, IN, p): p for p in range(3)}
        found: dict[int, list[int]] = {}
        at, end = plog.log_start_offset, plog.segments[-1].base_offset
        while at < end:
            chunk = plog.read(at, 1 << 20, max_offset=end)  # a segment at most
            if not chunk:
                break
            for pos, header in iter_batches(chunk):
                at = header.last_offset + 1
                if header.is_control:
                    continue
                for key, value in iter_key_values(chunk[pos : pos + header.size]):
                    if key in keys and value is not None:
                        offset = decode_offset_commit_value(value).offset
                        found.setdefault(keys[key], []).append(offset)
        return found

    return broker.call(read)


def admin_call(broker: BrokerThread, call: str, *args: object) -> object:
    async def run() -> object:
        admin = Admin(broker.bootstrap)
        try:
            for _ in range(100):
                try:
                    return await getattr(admin, call)(*args)
                except Exception:
                    await asyncio.sleep(0.05)  # the coordinator may still be loading
            return await getattr(admin, call)(*args)
        finally:
            await admin.close()

    return broker.run(run())


def socket_to(broker: BrokerThread) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), 30)
    find_coordinator(s, GROUP)
    return s


def connect(broker: BrokerThread) -> socket.socket:
    s = socket_to(broker)
    create_topic(s, IN, 2)
    return s


def complete(
    broker: BrokerThread, producer_id: int, *, commit: bool, coordinator_epoch: int = 3
) -> ErrorCode:
    assert broker.broker is not None
    coordinator = broker.broker.coordinator
    return broker.run(
        coordinator.complete_transaction(0, producer_id, 0, coordinator_epoch, commit)
    )


def transaction(producer: Producer, offsets: dict[int, int], *, commit: bool = True) -> None:
    """One consume-transform-produce round: an output record and the input offsets."""
    producer.begin_transaction()
    producer.send("out", b"v")
    producer.send_offsets_to_transaction(
        {TopicPartition(IN, p): OffsetAndMetadata(o) for p, o in offsets.items()},
        ConsumerGroupMetadata(GROUP),
    )
    if commit:
        producer.commit_transaction(20)
    else:
        producer.abort_transaction(20)


def test_transactions_with_offsets_leave_the_partition_stable_and_compacted(
    broker: BrokerThread,
) -> None:
    assert broker.broker is not None
    broker.call(lambda: broker.broker.create_topic(IN, 3, {}))  # type: ignore[union-attr]
    broker.call(lambda: broker.broker.create_topic("out", 1, {}))  # type: ignore[union-attr]
    admin_call(broker, "commit", GROUP, {(IN, 1): 5})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ctp"})
    try:
        producer.init_transactions(20)
        transaction(producer, {0: 1, 2: 9})
        transaction(producer, {0: 2, 1: 500}, commit=False)
        for n in range(3, 31):
            transaction(producer, {0: n})
    finally:
        producer.close()
    admin_call(broker, "commit", GROUP, {(IN, 2): 11})  # a plain commit after the transactions

    stable, high = stable_and_high(broker)
    assert stable == high

    def aborted() -> list[tuple[int, int]]:
        plog = offsets_log(broker)
        return plog.aborted_transactions(plog.log_start_offset, plog.high_watermark)

    assert len(broker.call(aborted)) == 1

    # The cleaner compacts the closed segments, which held most of the 30
    # transactions, down to at most one record per key: the newest committed
    # one, never the aborted transaction's.
    deadline = time.monotonic() + 30
    kept = offsets_below_active_segment(broker)
    while any(len(o) > 1 for o in kept.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        kept = offsets_below_active_segment(broker)
    assert all(len(o) <= 1 for o in kept.values()), kept
    assert kept[1] == [5]

    expected = {(IN, 0): 30, (IN, 1): 5, (IN, 2): 11}
    assert admin_call(broker, "committed", GROUP) == expected
    broker.restart()
    stable, high = stable_and_high(broker)
    assert stable == high
    assert admin_call(broker, "committed", GROUP) == expected


def test_an_open_transaction_holds_the_stable_offset_until_its_marker(
    broker: BrokerThread,
) -> None:
    with connect(broker) as s:
        assert txn_commit(s, GROUP, {(IN, 0): 42}, producer_id=PID) == {(IN, 0): OK}
        assert complete(broker, PID, commit=True) is OK
        stable, high = stable_and_high(broker)
        assert stable == high
        assert txn_commit(s, GROUP, {(IN, 0): 43}, producer_id=PID + 1) == {(IN, 0): OK}
        open_at = high  # the open transaction's batch is the next one
        assert stable_and_high(broker)[0] == open_at
    broker.restart()
    assert stable_and_high(broker)[0] == open_at
    with socket_to(broker) as s:
        assert fetch(s, GROUP, {IN: [0]}) == (OK, {(IN, 0): (42, OK)})
        assert fetch(s, GROUP, {IN: [0]}, require_stable=True) == (OK, {(IN, 0): (-1, UNSTABLE)})
        assert complete(broker, PID + 1, commit=True) is OK
        stable, high = stable_and_high(broker)
        assert stable == high
        assert fetch(s, GROUP, {IN: [0]}, require_stable=True) == (OK, {(IN, 0): (43, OK)})


def test_a_fenced_marker_fails_alone_and_leaves_the_offsets_pending(
    broker: BrokerThread,
) -> None:
    with connect(broker) as s:
        txn_commit(s, GROUP, {(IN, 0): 42}, producer_id=PID)
        assert complete(broker, PID, commit=True, coordinator_epoch=3) is OK
        txn_commit(s, GROUP, {(IN, 0): 43}, producer_id=PID)
        txn_commit(s, GROUP, {(IN, 1): 7}, producer_id=PID + 1)
        assert broker.broker is not None
        coordinator = broker.broker.coordinator

        async def both() -> list[ErrorCode]:
            # Written in one turn: the stale marker is refused, the other one is not.
            return list(
                await asyncio.gather(
                    coordinator.complete_transaction(0, PID, 0, 2, True),
                    coordinator.complete_transaction(0, PID + 1, 0, 3, True),
                )
            )

        assert broker.run(both()) == [ErrorCode.transaction_coordinator_fenced, OK]
        assert fetch(s, GROUP, {IN: [0, 1]}, require_stable=True) == (
            OK,
            {(IN, 0): (-1, UNSTABLE), (IN, 1): (7, OK)},
        )
        assert fetch(s, GROUP, {IN: [0]}) == (OK, {(IN, 0): (42, OK)})
        stable, high = stable_and_high(broker)
        assert stable < high
        assert complete(broker, PID, commit=True, coordinator_epoch=3) is OK
        assert stable_and_high(broker)[0] == stable_and_high(broker)[1]
        assert fetch(s, GROUP, {IN: [0]}) == (OK, {(IN, 0): (43, OK)})
