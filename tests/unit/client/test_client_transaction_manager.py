"""The transactional producer's state machine and its requests to the coordinators,
against a scripted broker: which calls are allowed when, and what each error the
coordinators may answer does -- retried, fatal (fenced), or only abortable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest
from client_fakes import FakeBroker, found
from virtual_time import run_virtual

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.exceptions import (
    AbortableTransactionError,
    CommitFailedError,
    FatalTransactionError,
    TransactionStateError,
)
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.idempotence import IdempotenceState
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.transaction_manager import TransactionManager, TxnState
from kgroups.client.transaction_requests import TransactionRequests
from kgroups.errors import ErrorCode

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
GROUP = ConsumerGroupMetadata("g", 7, "member-1", "instance-1")


class TxnBroker(FakeBroker):
    def _default_InitProducerId(self, request: Any) -> Any:
        return NS(error_code=ErrorCode.none, producer_id=4000, producer_epoch=3)

    def _default_AddPartitionsToTxn(self, request: Any) -> Any:
        return added(request, ErrorCode.none)

    def _default_AddOffsetsToTxn(self, request: Any) -> Any:
        return NS(error_code=ErrorCode.none)

    def _default_EndTxn(self, request: Any) -> Any:
        return NS(error_code=ErrorCode.none)

    def _default_TxnOffsetCommit(self, request: Any) -> Any:
        return offsets_committed(request, ErrorCode.none)


def added(request: Any, error: ErrorCode, failing: int | None = None) -> Any:
    """Every partition answered ``error`` -- or only ``failing``, the rest
    OPERATION_NOT_ATTEMPTED, as a coordinator refuses one bad partition."""

    def code(p: int) -> ErrorCode:
        if failing is None:
            return error
        return error if p == failing else ErrorCode.operation_not_attempted

    return NS(
        results_by_topic_v3_and_below=tuple(
            NS(
                name=t.name,
                results_by_partition=tuple(
                    NS(partition_index=p, partition_error_code=code(p)) for p in t.partitions
                ),
            )
            for t in request.v3_and_below_topics
        )
    )


def offsets_committed(request: Any, error: ErrorCode) -> Any:
    return NS(
        topics=tuple(
            NS(
                name=t.name,
                partitions=tuple(
                    NS(partition_index=p.partition_index, error_code=error) for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


def run(scenario: Callable[[TxnBroker, TransactionRequests], Awaitable[None]]) -> None:
    async def main() -> None:
        broker = TxnBroker()
        config = ProducerConfig.from_dict(
            {"bootstrap.servers": "fake:9092", "transactional.id": "tx", "retry.backoff.ms": 100}
        )
        assert config.transactional_id is not None
        manager = TransactionManager(config.transactional_id, config.transaction_timeout_ms)
        requests = TransactionRequests(
            config,
            manager,
            IdempotenceState(),
            broker,
            broker.connect,
            clock=asyncio.get_running_loop().time,
        )
        await scenario(broker, requests)

    run_virtual(main, timeout=30)


def deadline(seconds: float = 5) -> float:
    return asyncio.get_running_loop().time() + seconds


async def initialized(requests: TransactionRequests) -> TransactionManager:
    manager = requests.manager
    manager.begin_init()
    await requests.init_producer_id(deadline())
    manager.initialized()
    return manager


# -- the state machine alone ------------------------------------------------------


def test_calls_follow_the_transaction_states() -> None:
    manager = TransactionManager("tx", 60000)
    with pytest.raises(TransactionStateError, match="uninitialized"):
        manager.begin()
    manager.begin_init()
    manager.initialized()
    with pytest.raises(TransactionStateError):
        manager.check_may_send()  # outside a transaction
    with pytest.raises(TransactionStateError):
        manager.begin_commit()
    manager.begin()
    with pytest.raises(TransactionStateError, match="in transaction"):
        manager.begin()
    manager.check_may_send()
    manager.partitions_added([T0])
    assert manager.started and not manager.needs_adding(T0) and manager.needs_adding(T1)
    manager.begin_commit()
    assert manager.state is TxnState.COMMITTING
    manager.begin_commit()  # a commit that timed out may be called again
    manager.completed()
    assert manager.state is TxnState.READY and not manager.started
    manager.begin()
    manager.begin_abort()
    manager.completed()
    assert manager.state is TxnState.READY


def test_after_an_abortable_error_only_an_abort_is_allowed() -> None:
    manager = TransactionManager("tx", 60000)
    manager.begin_init()
    manager.initialized()
    manager.begin()
    with pytest.raises(AbortableTransactionError):
        manager.on_error(ErrorCode.topic_authorization_failed, "AddPartitionsToTxn")
    assert manager.state is TxnState.ABORTABLE_ERROR
    with pytest.raises(AbortableTransactionError):
        manager.check_may_send()
    with pytest.raises(AbortableTransactionError):
        manager.begin_commit()
    manager.begin_abort()
    manager.completed()
    manager.begin()  # a fresh transaction
    assert manager.state is TxnState.IN_TRANSACTION


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.producer_fenced,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.transactional_id_authorization_failed,
    ],
)
def test_fenced_or_unauthorized_is_fatal(error: ErrorCode) -> None:
    manager = TransactionManager("tx", 60000)
    manager.begin_init()
    manager.initialized()
    manager.begin()
    with pytest.raises(FatalTransactionError):
        manager.on_error(error, "AddPartitionsToTxn")
    for call in (manager.begin_abort, manager.begin_commit, manager.check_may_send, manager.begin):
        with pytest.raises(FatalTransactionError):
            call()
    assert manager.state is TxnState.FATAL_ERROR


# -- the requests against a scripted coordinator --------------------------------------


def test_init_finds_the_transaction_coordinator_and_retries_while_it_is_busy() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        broker.queue(
            "InitProducerId",
            NS(error_code=ErrorCode.coordinator_load_in_progress),
            NS(error_code=ErrorCode.concurrent_transactions),
            NS(error_code=ErrorCode.not_coordinator),
        )
        await initialized(requests)
        assert (requests.idempotence.producer_id, requests.idempotence.epoch) == (4000, 3)
        finds = broker.requests("FindCoordinator")
        assert [(f.key_type, f.coordinator_keys) for f in finds] == [(1, ("tx",))] * 2
        init = broker.requests("InitProducerId")
        assert len(init) == 4
        assert init[-1].transactional_id == "tx"
        assert init[-1].transaction_timeout.total_seconds() == 60
        assert (init[-1].producer_id, init[-1].producer_epoch) == (-1, -1)

    run(scenario)


def test_init_gives_up_at_its_deadline_while_no_coordinator_is_found() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        broker.replies["FindCoordinator"] = [found(ErrorCode.coordinator_not_available)] * 100
        requests.manager.begin_init()
        with pytest.raises(TimeoutError):
            await requests.init_producer_id(deadline(1))

    run(scenario)


def test_a_fenced_producer_fails_for_good() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        manager = await initialized(requests)
        manager.begin()
        await requests.add_partitions([T0], deadline())
        broker.queue("EndTxn", NS(error_code=ErrorCode.producer_fenced))
        manager.begin_commit()
        with pytest.raises(FatalTransactionError, match="producer_fenced"):
            await requests.end_txn(True, deadline())
        assert manager.state is TxnState.FATAL_ERROR
        with pytest.raises(FatalTransactionError):
            manager.begin_abort()

    run(scenario)


def test_add_partitions_is_one_request_and_its_failure_is_abortable() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        manager = await initialized(requests)
        manager.begin()
        await requests.add_partitions([T1, T0], deadline())
        (request,) = broker.requests("AddPartitionsToTxn")
        assert request.v3_and_below_transactional_id == "tx"
        assert (request.v3_and_below_producer_id, request.v3_and_below_producer_epoch) == (
            4000,
            3,
        )
        assert [(t.name, t.partitions) for t in request.v3_and_below_topics] == [("t", (0, 1))]
        assert manager.partitions == {T0, T1}

        other = TopicPartition("t", 2)
        broker.queue("AddPartitionsToTxn", lambda r: added(r, ErrorCode.concurrent_transactions))
        started = asyncio.get_running_loop().time()
        await requests.add_partitions([other], deadline())  # retried until added
        # Soon: the previous transaction's markers take moments, not retry.backoff.ms.
        assert asyncio.get_running_loop().time() - started == pytest.approx(0.02)
        assert other in manager.partitions
        assert len(broker.requests("AddPartitionsToTxn")) == 3

        broker.queue(
            "AddPartitionsToTxn",
            lambda r: added(r, ErrorCode.topic_authorization_failed, failing=3),
        )
        with pytest.raises(AbortableTransactionError, match="topic_authorization_failed"):
            await requests.add_partitions(
                [TopicPartition("t", 3), TopicPartition("u", 0)], deadline()
            )
        assert manager.state is TxnState.ABORTABLE_ERROR
        manager.begin_abort()
        await requests.end_txn(False, deadline())
        manager.completed()
        assert broker.requests("EndTxn")[-1].committed is False

    run(scenario)


def test_offsets_go_to_the_group_coordinator_with_the_members_generation() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        manager = await initialized(requests)
        manager.begin()
        broker.queue("TxnOffsetCommit", lambda r: offsets_committed(r, ErrorCode.not_coordinator))
        await requests.add_offsets({T0: OffsetAndMetadata(42, "m")}, GROUP, deadline())
        (add,) = broker.requests("AddOffsetsToTxn")
        assert (add.transactional_id, add.group_id, add.producer_id, add.producer_epoch) == (
            "tx",
            "g",
            4000,
            3,
        )
        commit = broker.requests("TxnOffsetCommit")[-1]
        assert len(broker.requests("TxnOffsetCommit")) == 2  # NOT_COORDINATOR: found again
        assert (commit.group_id, commit.generation_id, commit.member_id) == ("g", 7, "member-1")
        assert commit.group_instance_id == "instance-1"
        (topic,) = commit.topics
        assert [
            (p.partition_index, p.committed_offset, p.committed_metadata) for p in topic.partitions
        ] == [(0, 42, "m")]
        finds = [(f.key_type, f.coordinator_keys) for f in broker.requests("FindCoordinator")]
        assert finds[0] == (1, ("tx",))
        assert finds.count((0, ("g",))) == 2
        assert manager.started

    run(scenario)


def test_offsets_of_a_member_that_left_its_generation_fail_the_transaction() -> None:
    async def scenario(broker: TxnBroker, requests: TransactionRequests) -> None:
        manager = await initialized(requests)
        manager.begin()
        broker.queue(
            "TxnOffsetCommit", lambda r: offsets_committed(r, ErrorCode.illegal_generation)
        )
        with pytest.raises(CommitFailedError):
            await requests.add_offsets({T0: OffsetAndMetadata(42)}, GROUP, deadline())
        assert manager.state is TxnState.ABORTABLE_ERROR
        with pytest.raises(CommitFailedError):
            manager.begin_commit()

    run(scenario)
