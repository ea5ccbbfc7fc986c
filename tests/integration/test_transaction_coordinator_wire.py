"""The transaction coordinator over the wire, with raw requests: FindCoordinator
for a transactional id, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, DescribeTransactions, ListTransactions, and what read_committed
consumers then see."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.describe_transactions.v0 import DescribeTransactionsRequest
from kio.schema.end_txn import v1 as end_v1
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest as FindV3
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.list_transactions.v1 import ListTransactionsRequest
from kio.schema.types import TransactionalId
from kio.static.primitive import i32Timedelta
from test_transactions_wire import COMMITTED, UNCOMMITTED, _create, produce, read_all
from txn_offsets_wire import fetch as fetch_offsets
from txn_offsets_wire import find_coordinator, txn_commit

from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, ProducerId, TopicName, i8, i16, i32, i64

from broker_thread import BrokerThread
from raw_wire import call_once

TXN = "tx"  # txn_offsets_wire commits as this transactional id


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path / "data",
        transaction_state_log_num_partitions=3,
        offsets_topic_num_partitions=5,
    ).start()
    try:
        yield b
    finally:
        b.stop()


def init(port: int, txn_id: str = TXN, timeout_ms: int = 60_000) -> tuple[int, int]:
    """InitProducerId, tried again while an earlier transaction is ending (as clients do)."""
    request = InitProducerIdRequest(
        transactional_id=TransactionalId(txn_id),
        transaction_timeout=i32Timedelta.parse(timedelta(milliseconds=timeout_ms)),
        producer_id=ProducerId(-1),
        producer_epoch=i16(-1),
    )
    answers = []

    def done() -> bool:
        answers.append(call_once(port, request))
        return answers[-1].error_code != ErrorCode.concurrent_transactions

    eventually(done)
    assert answers[0].error_code in (ErrorCode.none, ErrorCode.concurrent_transactions)
    assert answers[-1].error_code == ErrorCode.none
    return answers[-1].producer_id, answers[-1].producer_epoch


def add_partitions(port: int, pid: int, epoch: int, txn_id: str = TXN) -> ErrorCode:
    answer = call_once(
        port,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=TransactionalId(txn_id),
            v3_and_below_producer_id=ProducerId(pid),
            v3_and_below_producer_epoch=i16(epoch),
            v3_and_below_topics=(
                AddPartitionsToTxnTopic(name=TopicName("t"), partitions=(i32(0),)),
            ),
        ),
    )
    (topic,) = answer.results_by_topic_v3_and_below
    error: ErrorCode = topic.results_by_partition[0].partition_error_code
    return error


def end_txn(port: int, pid: int, epoch: int, commit: bool, version: Any = None) -> ErrorCode:
    request_type = EndTxnRequest if version is None else version.EndTxnRequest
    answer = call_once(
        port,
        request_type(
            transactional_id=TransactionalId(TXN),
            producer_id=ProducerId(pid),
            producer_epoch=i16(epoch),
            committed=commit,
        ),
    )
    error: ErrorCode = answer.error_code
    return error


def describe(port: int, txn_id: str = TXN) -> Any:
    answer = call_once(
        port, DescribeTransactionsRequest(transactional_ids=(TransactionalId(txn_id),))
    )
    return answer.transaction_states[0]


def eventually(check: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


def committed(port: int) -> tuple[list[bytes | None], set[tuple[int, int]]]:
    """What a read_committed consumer is sent: data below the LSO, and the
    aborted transactions (producer id, first offset) among it."""
    values, aborted = read_all(port, COMMITTED)
    return values, set(aborted)


def committed_values(port: int) -> list[bytes | None]:
    values, aborted = committed(port)
    assert not aborted
    return values


def test_find_coordinator_for_a_transactional_id(broker: BrokerThread) -> None:
    found = call_once(
        broker.port,
        FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(TXN, "other")),
    )
    assert [c.error_code for c in found.coordinators] == [ErrorCode.none] * 2
    assert {c.port for c in found.coordinators} == {broker.port}
    one = call_once(broker.port, FindV3(key=TXN, key_type=i8(1)))
    assert (one.error_code, one.port) == (ErrorCode.none, broker.port)
    empty = call_once(broker.port, FindV3(key="", key_type=i8(1)))
    assert empty.error_code == ErrorCode.invalid_request


def test_commit_makes_records_and_offsets_visible(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    assert epoch == 0
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    assert produce(port, [b"a", b"b"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
    offsets = call_once(
        port,
        AddOffsetsToTxnRequest(
            transactional_id=TransactionalId(TXN),
            producer_id=ProducerId(pid),
            producer_epoch=i16(epoch),
            group_id=GroupId("g"),
        ),
    )
    assert offsets.error_code == ErrorCode.none
    with socket.create_connection(("127.0.0.1", port)) as s:
        find_coordinator(s, "g")
        assert txn_commit(s, "g", {("t", 0): 2}, producer_id=pid) == {("t", 0): ErrorCode.none}
    assert read_all(port, COMMITTED) == ([], [])  # open: nothing stable yet
    assert describe(port).transaction_state == "Ongoing"
    assert end_txn(port, pid, epoch, commit=True) == ErrorCode.none
    eventually(lambda: committed_values(port) == [b"a", b"b"])
    eventually(lambda: describe(port).transaction_state == "CompleteCommit")
    with socket.create_connection(("127.0.0.1", port)) as s:
        _, offsets_now = fetch_offsets(s, "g", {"t": [0]}, require_stable=True)
    assert offsets_now[("t", 0)] == (2, ErrorCode.none)
    # The id's state and the data survive a restart.
    broker.restart()
    assert describe(port).transaction_state == "CompleteCommit"
    assert committed_values(port) == [b"a", b"b"]


def test_an_offset_commit_after_its_transaction_ended_is_refused(broker: BrokerThread) -> None:
    """A TxnOffsetCommit arriving after its transaction was aborted (delayed, or
    from a zombie) would open a transaction no marker ends: the group's
    offsets would stay unstable for good. It is verified with the transaction
    coordinator first, as Kafka does (KIP-890)."""
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    with socket.create_connection(("127.0.0.1", port)) as s:
        find_coordinator(s, "g")
        # Never added to the transaction: refused.
        assert txn_commit(s, "g", {("t", 0): 1}, producer_id=pid) == {
            ("t", 0): ErrorCode.invalid_txn_state
        }
        offsets = call_once(
            port,
            AddOffsetsToTxnRequest(
                transactional_id=TransactionalId(TXN),
                producer_id=ProducerId(pid),
                producer_epoch=i16(epoch),
                group_id=GroupId("g"),
            ),
        )
        assert offsets.error_code == ErrorCode.none
        assert end_txn(port, pid, epoch, commit=False) == ErrorCode.none
        eventually(lambda: describe(port).transaction_state == "CompleteAbort")
        # Too late: the transaction it belonged to has ended.
        assert txn_commit(s, "g", {("t", 0): 7}, producer_id=pid) == {
            ("t", 0): ErrorCode.invalid_txn_state
        }
        assert fetch_offsets(s, "g", {"t": [0]}, require_stable=True) == (
            ErrorCode.none,
            {("t", 0): (-1, ErrorCode.none)},
        )


def test_abort_hides_the_records(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    assert produce(port, [b"gone"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
    assert end_txn(port, pid, epoch, commit=False) == ErrorCode.none
    eventually(lambda: committed(port) == ([b"gone"], {(pid, 0)}))
    assert read_all(port, UNCOMMITTED)[0] == [b"gone"]
    # The next transaction of the same producer commits.
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    assert produce(port, [b"kept"], pid=pid, epoch=epoch, seq=1, txn_id=TXN) == 0
    assert end_txn(port, pid, epoch, commit=True) == ErrorCode.none
    eventually(lambda: committed(port) == ([b"gone", b"kept"], {(pid, 0)}))


def test_produce_to_a_partition_not_added_is_refused(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    refused = produce(port, [b"x"], pid=pid, epoch=epoch, seq=0, txn_id=TXN)
    assert refused == ErrorCode.invalid_txn_state
    assert read_all(port, UNCOMMITTED)[0] == []


def test_a_second_init_fences_the_first_producer(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    assert produce(port, [b"zombie"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
    pid2, epoch2 = init(port)  # aborts the open transaction, bumps the epoch
    assert pid2 == pid and epoch2 > epoch
    assert end_txn(port, pid, epoch, commit=True) == ErrorCode.producer_fenced
    assert end_txn(port, pid, epoch, commit=True, version=end_v1) == (
        ErrorCode.invalid_producer_epoch
    )
    eventually(lambda: committed(port) == ([b"zombie"], {(pid, 0)}))


def test_a_transaction_past_its_timeout_is_aborted(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path / "data",
        transaction_state_log_num_partitions=1,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=50,
    ).start()
    try:
        port = broker.port
        _create(port)
        pid, epoch = init(port, timeout_ms=200)
        assert add_partitions(port, pid, epoch) == ErrorCode.none
        assert produce(port, [b"late"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
        eventually(lambda: describe(port).transaction_state == "CompleteAbort")
        eventually(lambda: committed(port) == ([b"late"], {(pid, 0)}))
        assert end_txn(port, pid, epoch, commit=True) == ErrorCode.producer_fenced
    finally:
        broker.stop()


def test_describe_and_list_transactions(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    described = describe(port)
    assert described.error_code == ErrorCode.none
    assert (described.producer_id, described.transaction_state) == (pid, "Ongoing")
    assert [(t.topic, t.partitions) for t in described.topics] == [("t", (0,))]
    assert describe(port, "unknown").error_code == ErrorCode.transactional_id_not_found
    listed = call_once(
        port,
        ListTransactionsRequest(
            state_filters=("Ongoing", "Nonsense"), producer_id_filters=(), duration_filter=i64(-1)
        ),
    )
    assert listed.error_code == ErrorCode.none
    assert [(t.transactional_id, t.producer_id) for t in listed.transaction_states] == [(TXN, pid)]
    assert listed.unknown_state_filters == ("Nonsense",)


def test_prepared_transaction_gets_its_markers_after_a_restart(broker: BrokerThread) -> None:
    port = broker.port
    _create(port)
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    assert produce(port, [b"p"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
    # The broker stops after PrepareCommit is stored, before any marker is written.
    assert broker.broker is not None
    runtime: Any = broker.broker.txn_coordinator
    runtime._markers_due = lambda _partition, driver: driver.markers.clear()
    assert end_txn(port, pid, epoch, commit=True) == ErrorCode.none
    assert describe(port).transaction_state == "PrepareCommit"
    assert read_all(port, COMMITTED) == ([], [])
    broker.restart()
    eventually(lambda: committed_values(port) == [b"p"])
    eventually(lambda: describe(port).transaction_state == "CompleteCommit")


def test_a_partition_leader_verifies_with_add_partitions_v4(broker: BrokerThread) -> None:
    from kio.schema.add_partitions_to_txn.v4 import AddPartitionsToTxnRequest as AddV4
    from kio.schema.add_partitions_to_txn.v4 import request as add_v4

    port = broker.port
    _create(port)
    _create(port, "u")
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none
    answer = call_once(
        port,
        AddV4(
            transactions=(
                add_v4.AddPartitionsToTxnTransaction(
                    transactional_id=TransactionalId(TXN),
                    producer_id=ProducerId(pid),
                    producer_epoch=i16(epoch),
                    verify_only=True,
                    topics=(
                        add_v4.AddPartitionsToTxnTopic(name=TopicName("t"), partitions=(i32(0),)),
                        add_v4.AddPartitionsToTxnTopic(name=TopicName("u"), partitions=(i32(0),)),
                    ),
                ),
            )
        ),
    )
    (txn,) = answer.results_by_transaction
    errors = {
        (t.name, p.partition_index): p.partition_error_code
        for t in txn.topic_results
        for p in t.results_by_partition
    }
    assert errors == {("t", 0): ErrorCode.none, ("u", 0): ErrorCode.transaction_abortable}
    # Verifying added nothing.
    assert [t.topic for t in describe(port).topics] == ["t"]
