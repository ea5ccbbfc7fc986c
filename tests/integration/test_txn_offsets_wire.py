"""TxnOffsetCommit on the wire, with the transaction's marker written by
``CoordinatorRuntime.complete_transaction`` (what WriteTxnMarkers calls for a
`__consumer_offsets` partition)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from txn_offsets_wire import create_topic, fetch, find_coordinator, offsets_partition, txn_commit

from kgroups.errors import ErrorCode
from kgroups.records.batch import decode_records, iter_batches
from kgroups.topics.placement import OFFSETS_TOPIC

from broker_thread import BrokerThread

OK = ErrorCode.none
UNSTABLE = ErrorCode.unstable_offset_commit
PID = 7000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    # The group coordinator's side alone, with producer ids no transaction
    # coordinator knows: nothing to verify them with.
    broker = BrokerThread(
        tmp_path / "data", transaction_partition_verification_enable=False
    ).start()
    try:
        yield broker
    finally:
        broker.stop()


def connect(broker: BrokerThread) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), 30)
    find_coordinator(s, "g")
    create_topic(s, "orders", 2)
    return s


def complete(broker: BrokerThread, group: str, commit: bool, producer_id: int = PID) -> ErrorCode:
    assert broker.broker is not None
    coordinator = broker.broker.coordinator
    return broker.run(
        coordinator.complete_transaction(offsets_partition(group), producer_id, 0, 3, commit)
    )


@pytest.mark.parametrize("version", range(6))
def test_every_version_commits_pending_offsets(broker: BrokerThread, version: int) -> None:
    with connect(broker) as s:
        assert txn_commit(s, "g", {("orders", 0): 42}, producer_id=PID, version=version) == {
            ("orders", 0): OK
        }
        assert fetch(s, "g", {"orders": [0]}) == (OK, {("orders", 0): (-1, OK)})
        assert complete(broker, "g", commit=True) is OK
        assert fetch(s, "g", {"orders": [0]}) == (OK, {("orders", 0): (42, OK)})


def test_require_stable_sees_pending_offsets_per_partition(broker: BrokerThread) -> None:
    with connect(broker) as s:
        txn_commit(s, "g", {("orders", 0): 42}, producer_id=PID)
        for version in (7, 8, 9):
            group_error, partitions = fetch(
                s, "g", {"orders": [0, 1]}, version=version, require_stable=True
            )
            assert group_error is OK
            assert partitions == {("orders", 0): (-1, UNSTABLE), ("orders", 1): (-1, OK)}
        assert fetch(s, "g", {"orders": [0]}, version=6) == (OK, {("orders", 0): (-1, OK)})
        assert complete(broker, "g", commit=False) is OK
        assert fetch(s, "g", {"orders": [0]}, require_stable=True) == (
            OK,
            {("orders", 0): (-1, OK)},
        )


def test_unknown_partitions_and_bad_group_ids_are_refused(broker: BrokerThread) -> None:
    with connect(broker) as s:
        assert txn_commit(s, "g", {("orders", 0): 1, ("nope", 0): 1}, producer_id=PID) == {
            ("orders", 0): OK,
            ("nope", 0): ErrorCode.unknown_topic_or_partition,
        }
        assert txn_commit(s, "", {("orders", 0): 1}, producer_id=PID) == {
            ("orders", 0): ErrorCode.invalid_group_id
        }
        assert txn_commit(
            s, "other", {("orders", 0): 1}, producer_id=PID, member_id="m", generation=2
        ) == {("orders", 0): ErrorCode.illegal_generation}


def test_the_marker_is_a_kafka_control_batch_of_the_producer(broker: BrokerThread) -> None:
    with connect(broker) as s:
        txn_commit(s, "g", {("orders", 0): 42}, producer_id=PID)
    assert complete(broker, "g", commit=True) is OK
    assert broker.broker is not None
    plog = broker.broker.partitions.log(OFFSETS_TOPIC, offsets_partition("g"))
    data = plog.read(plog.log_start_offset, 1 << 20, max_offset=plog.log_end_offset)
    headers = [(header, data[pos : pos + header.size]) for pos, header in iter_batches(data)]
    transactional = [h for h, _ in headers if h.is_transactional]
    assert [(h.producer_id, h.producer_epoch, h.is_control) for h in transactional] == [
        (PID, 0, False),
        (PID, 0, True),
    ]
    (marker,) = decode_records(next(b for h, b in headers if h.is_control))
    assert marker.key == b"\x00\x00\x00\x01"  # version 0, COMMIT
    assert marker.value == b"\x00\x00\x00\x00\x00\x03"  # version 0, coordinator epoch 3


def test_a_partition_not_held_answers_not_coordinator(broker: BrokerThread) -> None:
    assert broker.broker is not None
    coordinator = broker.broker.coordinator
    with connect(broker):
        pass
    assert (
        broker.run(coordinator.complete_transaction(99, PID, 0, 0, True))
        is ErrorCode.not_coordinator
    )


def test_pending_and_committed_offsets_survive_a_restart(broker: BrokerThread) -> None:
    with connect(broker) as s:
        txn_commit(s, "g", {("orders", 0): 42}, producer_id=PID)
        assert complete(broker, "g", commit=True) is OK
        txn_commit(s, "g", {("orders", 1): 43}, producer_id=PID + 1)  # left open
    broker.restart()
    with socket.create_connection(("127.0.0.1", broker.port), 30) as s:
        find_coordinator(s, "g")
        assert fetch(s, "g", {"orders": [0, 1]}, require_stable=True) == (
            OK,
            {("orders", 0): (42, OK), ("orders", 1): (-1, UNSTABLE)},
        )
        assert complete(broker, "g", commit=True, producer_id=PID + 1) is OK
        assert fetch(s, "g", {"orders": [1]}) == (OK, {("orders", 1): (43, OK)})
