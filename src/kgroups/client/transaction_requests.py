"""The transactional producer's requests to its transaction coordinator and to a
group's coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
and TxnOffsetCommit.

The transaction coordinator is the broker FindCoordinator names for the
transactional id (key type 1); TxnOffsetCommit goes to the group's own
coordinator with the consumer's group metadata (KIP-447), so that a zombie
member of an older generation cannot commit. Each request is retried until
its deadline while the coordinator is moving or busy; the TransactionManager
decides what an error means.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic
from kio.schema.end_txn.v3 import EndTxnRequest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.txn_offset_commit.v3 import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta, i64

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.coordinator_link import Connect, CoordinatorLink, GroupCluster
from kgroups.client.exceptions import CommitFailedError, RetriableError
from kgroups.client.group_metadata import ConsumerGroupMetadata
from kgroups.client.idempotence import IdempotenceState
from kgroups.client.producer_config import ProducerConfig
from kgroups.client.transaction_manager import Retry, TransactionManager
from kgroups.errors import ErrorCode

__all__ = ["TransactionRequests"]

_FIND_TRANSACTION_COORDINATOR = 1
_CONCURRENT_TRANSACTIONS_BACKOFF = 0.02
# A member that left its generation may not commit: as the consumer's commit, fail.
_NOT_IN_GENERATION = (
    ErrorCode.unknown_member_id,
    ErrorCode.illegal_generation,
    ErrorCode.fenced_instance_id,
)


class TransactionRequests:
    # Wired like Sender from the producer's parts, but no step of the two is shared.
    def __init__(
        self,
        config: ProducerConfig,
        manager: TransactionManager,
        idempotence: IdempotenceState,
        cluster: GroupCluster,
        connect: Connect,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.manager = manager
        self.idempotence = idempotence
        self._cluster = cluster
        self._connect = connect
        self._clock = clock
        self._backoff = config.retry_backoff_ms / 1000
        self._timeout = config.request_timeout_ms / 1000
        self.coordinator = self._link(manager.transactional_id, _FIND_TRANSACTION_COORDINATOR)
        self._group_coordinators: dict[str, CoordinatorLink] = {}

    def _link(self, key: str, key_type: int) -> CoordinatorLink:
        return CoordinatorLink(
            key,
            self._cluster,
            connect=self._connect,
            request_timeout_ms=self.config.request_timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
            clock=self._clock,
            key_type=key_type,
        )

    @property
    def _tid(self) -> TransactionalId:
        return TransactionalId(self.manager.transactional_id)

    async def init_producer_id(self, deadline: float) -> None:
        """A producer id and a new epoch for the transactional id: fences older
        producers of the id and aborts what they left open. After a failed
        transaction the current id and epoch go along, to bump the epoch (KIP-360)."""
        idem = self.idempotence
        bump = idem.has_producer_id
        request = InitProducerIdRequest(
            transactional_id=self._tid,
            transaction_timeout=i32Timedelta.parse(
                datetime.timedelta(milliseconds=self.manager.transaction_timeout_ms)
            ),
            producer_id=ProducerId(idem.producer_id if bump else -1),
            producer_epoch=i16(idem.epoch if bump else -1),
        )
        response = await self._call(
            self.coordinator,
            request,
            (0, 4),
            deadline,
            "InitProducerId",
            lambda r: r.error_code,
            fatal_otherwise=True,
        )
        idem.set_producer(response.producer_id, response.producer_epoch)

    async def add_partitions(self, partitions: list[TopicPartition], deadline: float) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self._tid,
            v3_and_below_producer_id=ProducerId(self.idempotence.producer_id),
            v3_and_below_producer_epoch=i16(self.idempotence.epoch),
            v3_and_below_topics=tuple(
                AddPartitionsToTxnTopic(name=TopicName(t), partitions=tuple(i32(p) for p in ps))
                for t, ps in by_topic.items()
            ),
        )
        await self._call(
            self.coordinator, request, (0, 3), deadline, "AddPartitionsToTxn", _add_partitions_error
        )
        self.manager.partitions_added(partitions)

    async def add_offsets(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group: ConsumerGroupMetadata,
        deadline: float,
    ) -> None:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to
        the group's coordinator: the offsets count once the transaction commits."""
        idem = self.idempotence
        await self._call(
            self.coordinator,
            AddOffsetsToTxnRequest(
                transactional_id=self._tid,
                producer_id=ProducerId(idem.producer_id),
                producer_epoch=i16(idem.epoch),
                group_id=GroupId(group.group_id),
            ),
            (0, 3),
            deadline,
            "AddOffsetsToTxn",
            lambda r: r.error_code,
        )
        self.manager.offsets_added = True
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequestPartition(
                    partition_index=i32(tp.partition),
                    committed_offset=i64(offset.offset),
                    committed_leader_epoch=i32(offset.leader_epoch),
                    committed_metadata=offset.metadata,
                )
            )
        link = self._group_coordinators.get(group.group_id)
        if link is None:
            link = self._group_coordinators[group.group_id] = self._link(group.group_id, 0)
        await self._call(
            link,
            TxnOffsetCommitRequest(
                transactional_id=self._tid,
                group_id=GroupId(group.group_id),
                producer_id=ProducerId(idem.producer_id),
                producer_epoch=i16(idem.epoch),
                generation_id=i32(group.generation_id),
                member_id=group.member_id,
                group_instance_id=group.group_instance_id,
                topics=tuple(
                    TxnOffsetCommitRequestTopic(name=TopicName(t), partitions=tuple(ps))
                    for t, ps in by_topic.items()
                ),
            ),
            (0, 3),
            deadline,
            "TxnOffsetCommit",
            _txn_offset_commit_error,
        )

    async def end_txn(self, commit: bool, deadline: float) -> None:
        idem = self.idempotence
        await self._call(
            self.coordinator,
            EndTxnRequest(
                transactional_id=self._tid,
                producer_id=ProducerId(idem.producer_id),
                producer_epoch=i16(idem.epoch),
                committed=commit,
            ),
            (0, 3),
            deadline,
            "EndTxn",
            lambda r: r.error_code,
            fatal_otherwise=True,
        )

    async def _call(
        self,
        link: CoordinatorLink,
        request: Any,
        versions: tuple[int, int],
        deadline: float,
        what: str,
        error_of: Callable[[Any], ErrorCode],
        *,
        fatal_otherwise: bool = False,
    ) -> Any:
        """Send until answered without error (or raise what the error means)."""
        while True:
            if not await link.ensure_ready(deadline):
                raise TimeoutError(f"{what}: no coordinator found before the deadline")
            try:
                response = await link.send(request, request.__api_key__, *versions, self._timeout)
                error = error_of(response)
            except RetriableError as e:
                error = e.error_code
            if error == ErrorCode.none:
                return response
            if error in _NOT_IN_GENERATION:
                self.manager.fail_abortable(
                    CommitFailedError(error, f"{what}: the consumer left its generation")
                )
            if self.manager.on_error(error, what, fatal_otherwise=fatal_otherwise) is (
                Retry.FIND_COORDINATOR
            ):
                link.mark_unknown(error.name)
            backoff = self._backoff
            if error == ErrorCode.concurrent_transactions:
                # The previous transaction is writing its markers: done in moments.
                backoff = min(backoff, _CONCURRENT_TRANSACTIONS_BACKOFF)
            if self._clock() + backoff >= deadline:
                raise TimeoutError(f"{what} still failing ({error.name}) at the deadline")
            await asyncio.sleep(backoff)

    async def close(self) -> None:
        await self.coordinator.close()
        for link in self._group_coordinators.values():
            await link.close()


def _add_partitions_error(response: Any) -> ErrorCode:
    """The partitions' worst error: OPERATION_NOT_ATTEMPTED only says another
    partition failed."""
    errors = {
        p.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    } - {ErrorCode.none, ErrorCode.operation_not_attempted}
    return min(errors, key=_severity) if errors else ErrorCode.none


def _txn_offset_commit_error(response: Any) -> ErrorCode:
    errors = {p.error_code for t in response.topics for p in t.partitions} - {ErrorCode.none}
    return min(errors, key=_severity) if errors else ErrorCode.none


def _severity(error: ErrorCode) -> int:
    """Fatal and abortable errors first: they decide over a retriable one."""
    return 1 if error.retriable else 0
