"""A transaction coordinator shard on virtual time, with a log its records go to."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.result import Record
from kgroups.errors import ErrorCode
from kgroups.transactions.config import TransactionConfig
from kgroups.transactions.messages import (
    AddOffsets,
    AddPartitions,
    AddPartitionsAnswer,
    Answer,
    DescribedTransaction,
    EndTxn,
    EndTxnAnswer,
    ErrorAnswer,
    InitProducerId,
    InitProducerIdAnswer,
    ListTransactions,
    ListTransactionsAnswer,
    TopicPartition,
)
from kgroups.transactions.result import TxnMarkers, TxnResult
from kgroups.transactions.shard import TransactionCoordinatorShard

LATEST = {"init": 5, "add": 5, "offsets": 4, "end": 5}


class Coordinator:
    def __init__(
        self,
        config: TransactionConfig | None = None,
        *,
        now_ms: int = 1_000_000,
        log: list[Record] | None = None,
        coordinator_epoch: int = 3,
        first_producer_id: int = 1000,
        deleted: frozenset[str] = frozenset(),
    ) -> None:
        self.now = now_ms
        self.log: list[Record] = [] if log is None else log
        self._ids = itertools.count(first_producer_id)
        # Topics that do not exist (any more).
        self.deleted = set(deleted)
        self.shard = TransactionCoordinatorShard(
            0,
            config or TransactionConfig(),
            coordinator_epoch=coordinator_epoch,
            next_producer_id=lambda: next(self._ids),
            partition_exists=lambda topic, _p: topic not in self.deleted,
        )
        # Markers the shell was asked to write, in order.
        self.markers: list[TxnMarkers] = []
        # Results whose append the test holds back (durable=False).
        self.held: list[TxnResult] = []
        self._tokens = itertools.count()

    # -- the shell ---------------------------------------------------------

    def run(self, result: TxnResult, durable: bool = True) -> list[tuple[object, Answer]]:
        """Append the result's records (made durable at once unless told
        otherwise); the replies and markers due."""
        if result.append_token is None:
            self.markers.extend(result.markers)
            return result.replies
        if not durable:
            self.held.append(result)
            return []
        return self.make_durable(result)

    def make_durable(self, result: TxnResult) -> list[tuple[object, Answer]]:
        self.log.extend(result.records)
        self.shard.append_durable(result.append_token)
        self.markers.extend(result.markers)
        return result.replies

    def fail(self, result: TxnResult, error: ErrorCode) -> list[tuple[object, Answer]]:
        return self.run(self.shard.append_failed(result.append_token, error, self.now))

    def ctx(self, version: int) -> RequestContext:
        return RequestContext(version, "client", "/127.0.0.1", reply_to=next(self._tokens))

    def answer(self, result: TxnResult, durable: bool = True) -> Answer | None:
        replies = self.run(result, durable)
        assert len(replies) <= 1
        return replies[0][1] if replies else None

    def advance(self, ms: int) -> None:
        """Let ``ms`` pass, firing every timer due on the way."""
        end = self.now + ms
        while (deadline := self.shard.next_deadline_ms()) is not None and deadline <= end:
            self.now = max(self.now, deadline)
            self.run(self.shard.on_timer(self.now))
        self.now = end

    def take_markers(self) -> list[TxnMarkers]:
        markers, self.markers = self.markers, []
        return markers

    def write_markers(
        self, markers: TxnMarkers, errors: Mapping[TopicPartition, ErrorCode] | None = None
    ) -> None:
        """The partition leaders answer the markers: all written unless ``errors`` say."""
        answered = dict.fromkeys(markers.partitions, ErrorCode.none)
        answered.update(errors or {})
        self.run(
            self.shard.markers_written(
                markers.transactional_id,
                markers.producer_id,
                markers.producer_epoch,
                answered,
                self.now,
            )
        )

    def complete_markers(self) -> None:
        for markers in self.take_markers():
            self.write_markers(markers)

    def reload(self) -> Coordinator:
        """A new coordinator of the partition, loaded from its log."""
        other = Coordinator(now_ms=self.now, log=list(self.log), coordinator_epoch=4)
        other.shard.begin_load()
        for key, value in self.log:
            other.shard.replay(key, value)
        other.run(other.shard.finish_load(self.now))
        return other

    # -- requests ----------------------------------------------------------

    def init(
        self,
        txn_id: str,
        timeout_ms: int = 60000,
        producer_id: int = -1,
        producer_epoch: int = -1,
        version: int = LATEST["init"],
        durable: bool = True,
    ) -> InitProducerIdAnswer | None:
        req = InitProducerId(txn_id, timeout_ms, producer_id, producer_epoch)
        answer = self.answer(self.shard.init_producer_id(req, self.ctx(version), self.now), durable)
        assert answer is None or isinstance(answer, InitProducerIdAnswer)
        return answer

    def add(
        self,
        txn_id: str,
        producer: InitProducerIdAnswer,
        *partitions: TopicPartition,
        verify_only: bool = False,
        version: int = LATEST["add"],
        durable: bool = True,
    ) -> dict[TopicPartition, ErrorCode] | None:
        req = AddPartitions(
            txn_id, producer.producer_id, producer.producer_epoch, partitions, verify_only
        )
        answer = self.answer(self.shard.add_partitions(req, self.ctx(version), self.now), durable)
        assert answer is None or isinstance(answer, AddPartitionsAnswer)
        return None if answer is None else answer.errors

    def add_offsets(
        self, txn_id: str, producer: InitProducerIdAnswer, group_id: str
    ) -> ErrorCode | None:
        req = AddOffsets(txn_id, producer.producer_id, producer.producer_epoch, group_id)
        answer = self.answer(self.shard.add_offsets(req, self.ctx(LATEST["offsets"]), self.now))
        assert answer is None or isinstance(answer, ErrorAnswer)
        return None if answer is None else answer.error

    def end(
        self,
        txn_id: str,
        producer: InitProducerIdAnswer,
        commit: bool,
        version: int = LATEST["end"],
        durable: bool = True,
    ) -> ErrorCode | None:
        req = EndTxn(txn_id, producer.producer_id, producer.producer_epoch, commit)
        answer = self.answer(self.shard.end_txn(req, self.ctx(version), self.now), durable)
        assert answer is None or isinstance(answer, EndTxnAnswer)
        return None if answer is None else answer.error

    def describe(self, *txn_ids: str) -> tuple[DescribedTransaction, ...]:
        answer = self.answer(self.shard.describe_transactions(txn_ids, self.ctx(0), self.now))
        assert isinstance(answer, tuple)
        return answer

    def list(self, **filters: object) -> ListTransactionsAnswer:
        req = ListTransactions(**filters)  # type: ignore[arg-type]
        answer = self.answer(self.shard.list_transactions(req, self.ctx(1), self.now))
        assert isinstance(answer, ListTransactionsAnswer)
        return answer
