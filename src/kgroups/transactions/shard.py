"""The transaction coordinator for one ``__transaction_state`` partition.

Sans-IO, shaped like the group coordinator's shard (coordinator/shard.py):
every entry point takes the current time and returns a TxnResult — records
to append to the partition as one batch, replies to send and markers to
write once they are durable. Nothing here reads a clock or does IO; the
shell drives the timers through ``next_deadline_ms`` and ``on_timer``.

As in Kafka, a transactional id's state changes only once its record is
durable: meanwhile the id holds the state it is heading for as ``pending``
and concurrent requests for it are answered CONCURRENT_TRANSACTIONS. The
shell reports each batch with ``append_durable`` (which applies it, through
the same path that ``replay`` takes for records loaded) or ``append_failed``
(which drops it and answers its requests with the error).

A transaction ends in two steps (ending.py): Prepare record and markers,
then the Complete record. A shard loaded with transactions in a Prepare
state writes their markers again (``finish_load``). Which producer id and
epoch InitProducerId gives is in producer_epochs.py, AddPartitionsToTxn's
checks in verification.py, DescribeTransactions and ListTransactions in
listing.py, the periodic checks' choices in expiration.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.timers import TimerQueue
from kgroups.errors import ErrorCode
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group
from kgroups.transactions.config import TransactionConfig
from kgroups.transactions.ending import TransactionEnding
from kgroups.transactions.expiration import expired, timed_out
from kgroups.transactions.failed_answers import answer_error, failed_answer
from kgroups.transactions.listing import described, listed
from kgroups.transactions.messages import (
    AddOffsets,
    AddPartitions,
    AddPartitionsAnswer,
    Answer,
    EndTxn,
    EndTxnAnswer,
    ErrorAnswer,
    InitProducerId,
    InitProducerIdAnswer,
    ListTransactions,
    ListTransactionsAnswer,
    TopicPartition,
    client_error,
)
from kgroups.transactions.producer_epochs import initialized, may_recover
from kgroups.transactions.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    decode_key,
    decode_value,
)
from kgroups.transactions.result import TxnAppendToken, TxnMarkers, TxnResult
from kgroups.transactions.state import (
    PREPARED,
    Transit,
    TxnMetadata,
    TxnState,
    is_busy,
)
from kgroups.transactions.verification import (
    Errors,
    producer_error,
    unknown_partitions,
    verified,
)
from kgroups.transactions.writes import Call, Write

# The shard's periodic checks and its retries, on one timer queue.
_ABORT_CHECK = "abort-timed-out"
_EXPIRY_CHECK = "expire-ids"
_RETRY = "retry"


class TransactionCoordinatorShard:
    def __init__(
        self,
        partition: int,
        config: TransactionConfig,
        *,
        coordinator_epoch: int,
        next_producer_id: Callable[[], int],
        partition_exists: Callable[[str, int], bool] = lambda _topic, _partition: True,
    ) -> None:
        self.partition = partition
        self.config = config
        # The leader epoch of the partition: markers carry it, so that a
        # partition leader can refuse those of an older coordinator.
        self.coordinator_epoch = coordinator_epoch
        self._next_producer_id = next_producer_id
        self._partition_exists = partition_exists
        self._txns: dict[str, TxnMetadata] = {}
        self._timers: TimerQueue[str, None] = TimerQueue()
        self._armed = False
        self._loading = False
        self._batch_ids = itertools.count(1)
        self._in_flight: dict[int, list[Write]] = {}
        self._ending = TransactionEnding(self._txns, coordinator_epoch, partition_exists)

    @property
    def loading(self) -> bool:
        return self._loading

    def transactions(self) -> Iterator[TxnMetadata]:
        """Every transactional id's state (for tools and tests; do not change them)."""
        return iter(list(self._txns.values()))

    def transaction(self, transactional_id: str) -> TxnMetadata | None:
        return self._txns.get(transactional_id)

    # -- InitProducerId ------------------------------------------------------

    def init_producer_id(self, req: InitProducerId, ctx: RequestContext, now_ms: int) -> TxnResult:
        call = Call()
        error = self._init_producer_id(req, ctx, now_ms, call)
        if error is not None:
            answer = InitProducerIdAnswer(client_error("InitProducerId", ctx.api_version, error))
            call.replies.append((ctx.reply_to, answer))
        return self._result(call, now_ms)

    def _init_producer_id(
        self, req: InitProducerId, ctx: RequestContext, now_ms: int, call: Call
    ) -> ErrorCode | None:
        if (req.producer_id == NO_PRODUCER_ID) != (req.producer_epoch == NO_PRODUCER_EPOCH):
            return ErrorCode.invalid_request  # KIP-360 names both or neither
        if not req.transactional_id:
            return ErrorCode.invalid_request
        if not 0 < req.transaction_timeout_ms <= self.config.max_timeout_ms:
            return ErrorCode.invalid_transaction_timeout
        if self._loading:
            return ErrorCode.coordinator_load_in_progress
        meta = self._txns.get(req.transactional_id)
        if meta is None:
            meta = TxnMetadata(
                req.transactional_id,
                self._next_producer_id(),
                timeout_ms=req.transaction_timeout_ms,
                last_update_ms=now_ms,
            )
            self._txns[req.transactional_id] = meta
        if is_busy(meta):
            return ErrorCode.concurrent_transactions
        expected = req.producer_id != NO_PRODUCER_ID
        if expected and not may_recover(meta, req.producer_id, req.producer_epoch):
            return ErrorCode.producer_fenced
        if meta.state is TxnState.ONGOING:
            # Fence the producer of the ongoing transaction and abort it; the
            # new one retries until the abort is written (and then gets an
            # epoch bumped once more, or a new producer id if that one is the last).
            answer = InitProducerIdAnswer(ErrorCode.concurrent_transactions)
            self._ending.fence_and_abort(meta, now_ms, call, (ctx.reply_to, answer))
            return None
        transit = initialized(meta, req, now_ms, self._next_producer_id)
        if transit is None:
            return ErrorCode.producer_fenced
        answer = InitProducerIdAnswer(ErrorCode.none, transit.producer_id, transit.producer_epoch)
        call.write(meta, transit, (ctx.reply_to, answer))
        return None

    # -- AddPartitionsToTxn, AddOffsetsToTxn ---------------------------------

    def add_partitions(self, req: AddPartitions, ctx: RequestContext, now_ms: int) -> TxnResult:
        """One transaction of an AddPartitionsToTxn request; the shell merges
        the answers of a batched (v4+) request."""
        call = Call()
        partitions = tuple(dict.fromkeys(req.partitions))
        errors = unknown_partitions(partitions, self._partition_exists)
        if errors is None:
            errors = (
                self._verify(req, partitions)
                if req.verify_only
                else self._add(req, partitions, ctx, now_ms, call)
            )
        if errors is not None:
            answered = {
                tp: client_error("AddPartitionsToTxn", ctx.api_version, e)
                for tp, e in errors.items()
            }
            call.replies.append((ctx.reply_to, AddPartitionsAnswer(req.transactional_id, answered)))
        return self._result(call, now_ms)

    def add_offsets(self, req: AddOffsets, ctx: RequestContext, now_ms: int) -> TxnResult:
        """Adds the group's ``__consumer_offsets`` partition to the transaction."""
        call = Call()
        offsets = (OFFSETS_TOPIC, partition_for_group(req.group_id, self.config.offsets_partitions))
        add = AddPartitions(req.transactional_id, req.producer_id, req.producer_epoch, (offsets,))
        done = ErrorAnswer(ErrorCode.none)
        errors = self._add(add, (offsets,), ctx, now_ms, call, done)
        if errors is not None:
            error = client_error("AddOffsetsToTxn", ctx.api_version, errors[offsets])
            call.replies.append((ctx.reply_to, ErrorAnswer(error)))
        return self._result(call, now_ms)

    def _add(
        self,
        req: AddPartitions,
        partitions: tuple[TopicPartition, ...],
        ctx: RequestContext,
        now_ms: int,
        call: Call,
        done: Answer | None = None,
    ) -> Errors | None:
        """The errors for every partition, or None if a record will answer
        (with ``done``, by default AddPartitionsToTxn's answer)."""
        if not req.transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        meta = self._txns.get(req.transactional_id)
        if error is None and meta is not None:
            if is_busy(meta):
                error = ErrorCode.concurrent_transactions
            elif meta.state is TxnState.ONGOING and meta.partitions.issuperset(partitions):
                error = ErrorCode.none
        if error is not None:
            return dict.fromkeys(partitions, error)
        assert meta is not None
        ongoing = meta.state is TxnState.ONGOING
        transit = meta.transit(
            TxnState.ONGOING,
            now_ms,
            partitions=meta.partitions.union(partitions),
            start_ms=meta.start_ms if ongoing else now_ms,
        )
        if done is None:
            done = AddPartitionsAnswer(
                req.transactional_id, dict.fromkeys(partitions, ErrorCode.none)
            )
        call.write(meta, transit, (ctx.reply_to, done))
        return None

    def _verify(self, req: AddPartitions, partitions: tuple[TopicPartition, ...]) -> Errors:
        if not req.transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        return verified(self._txns.get(req.transactional_id), error, partitions)

    def _producer_error(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        if self._loading:
            return ErrorCode.coordinator_load_in_progress
        return producer_error(self._txns.get(transactional_id), producer_id, producer_epoch)

    # -- EndTxn ----------------------------------------------------------------

    def end_txn(self, req: EndTxn, ctx: RequestContext, now_ms: int) -> TxnResult:
        call = Call()
        error = self._end_txn(req, ctx, now_ms, call)
        if error is not None:
            error = client_error("EndTxn", ctx.api_version, error)
            call.replies.append((ctx.reply_to, EndTxnAnswer(error)))
        return self._result(call, now_ms)

    def _end_txn(
        self, req: EndTxn, ctx: RequestContext, now_ms: int, call: Call
    ) -> ErrorCode | None:
        if not req.transactional_id:
            return ErrorCode.invalid_request
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        if error is not None:
            return error
        meta = self._txns[req.transactional_id]
        if is_busy(meta):
            # A retry while the transaction ends: the client waits for it.
            return ErrorCode.concurrent_transactions
        state = meta.state
        if state is TxnState.ONGOING:
            done = EndTxnAnswer(ErrorCode.none, meta.producer_id, meta.producer_epoch)
            self._ending.prepare(meta, req.commit, now_ms, call, (ctx.reply_to, done))
            return None
        # A retry of an EndTxn whose answer was lost: the same decision is
        # answered as done; the other one is invalid.
        if state is (TxnState.COMPLETE_COMMIT if req.commit else TxnState.COMPLETE_ABORT):
            done = EndTxnAnswer(ErrorCode.none, meta.producer_id, meta.producer_epoch)
            call.replies.append((ctx.reply_to, done))
            return None
        return ErrorCode.invalid_txn_state

    # -- markers ---------------------------------------------------------------

    def markers_written(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        errors: Mapping[TopicPartition, ErrorCode],
        now_ms: int,
    ) -> TxnResult:
        """The partition leaders answered the markers of a TxnMarkers
        (ending.py): the transaction completes once every partition has its
        marker; those that failed are tried again after ``retry_backoff_ms``."""
        call = Call()
        if self._ending.written(
            transactional_id, producer_id, producer_epoch, errors, now_ms, call
        ):
            self._arm_retry(now_ms)
        return self._result(call, now_ms)

    def pending_markers(self) -> list[TxnMarkers]:
        """The markers of every prepared transaction not yet written (after a
        shell lost track of them, say)."""
        return self._ending.pending_markers()

    # -- DescribeTransactions, ListTransactions --------------------------------

    def describe_transactions(
        self, transactional_ids: tuple[str, ...], ctx: RequestContext, now_ms: int
    ) -> TxnResult:
        """The ids of the request owned by this shard; the shell merges results."""
        call = Call()
        answers = tuple(
            described(txn_id, self._txns.get(txn_id), self._loading) for txn_id in transactional_ids
        )
        call.replies.append((ctx.reply_to, answers))
        return self._result(call, now_ms)

    def list_transactions(
        self, req: ListTransactions, ctx: RequestContext, now_ms: int
    ) -> TxnResult:
        """This shard's transactions; the shell concatenates the shards' lists."""
        call = Call()
        call.replies.append((ctx.reply_to, self._list(req, now_ms)))
        return self._result(call, now_ms)

    def _list(self, req: ListTransactions, now_ms: int) -> ListTransactionsAnswer:
        if self._loading:
            return ListTransactionsAnswer(ErrorCode.coordinator_load_in_progress)
        return listed(req, self._txns.values(), now_ms)

    # -- timers ----------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        return self._timers.next_deadline()

    def nothing_due_before(self, ms: int) -> bool:
        return self._timers.nothing_due_before(ms)

    def on_timer(self, now_ms: int) -> TxnResult:
        """Run every check due at ``now_ms``."""
        call = Call()
        due = []
        while (entry := self._timers.pop_due(now_ms)) is not None:
            due.append(entry[0])
        for key in due:
            if key == _ABORT_CHECK:
                self._abort_timed_out(now_ms, call)
                self._timers.schedule(key, now_ms + self.config.abort_check_interval_ms, None)
            elif key == _EXPIRY_CHECK:
                self._expire_ids(now_ms, call)
                self._timers.schedule(key, now_ms + self.config.expiry_check_interval_ms, None)
            else:
                self._ending.retry(now_ms, call)
        return self._result(call, now_ms)

    def _abort_timed_out(self, now_ms: int, call: Call) -> None:
        """Transactions older than their timeout are aborted, their producer fenced."""
        if self._loading:
            return
        for meta in timed_out(self._txns.values(), now_ms):
            self._ending.fence_and_abort(meta, now_ms, call, None)

    def _expire_ids(self, now_ms: int, call: Call) -> None:
        """Transactional ids idle for ``id_expiration_ms`` go, with a tombstone."""
        if self._loading:
            return
        for meta in expired(self._txns.values(), now_ms, self.config.id_expiration_ms):
            call.write(meta, None)

    def _arm_retry(self, now_ms: int) -> None:
        if _RETRY not in self._timers:
            self._timers.schedule(_RETRY, now_ms + self.config.retry_backoff_ms, None)

    def _arm_checks(self, now_ms: int) -> None:
        if not self._armed:
            self._armed = True
            self._timers.schedule(_ABORT_CHECK, now_ms + self.config.abort_check_interval_ms, None)
            self._timers.schedule(
                _EXPIRY_CHECK, now_ms + self.config.expiry_check_interval_ms, None
            )

    # -- loading and storage ---------------------------------------------------

    def begin_load(self) -> None:
        """The partition's log is being read: answer as loading until ``finish_load``."""
        self._loading = True

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one record of the partition, in log order."""
        self._loading = True
        transactional_id = decode_key(key)
        self._apply(
            transactional_id, None if value is None else Transit.from_value(decode_value(value))
        )

    def finish_load(self, now_ms: int) -> TxnResult:
        """Loading is over: prepared transactions get their markers again."""
        self._loading = False
        call = Call()
        for meta in self._txns.values():
            if meta.state in PREPARED:
                self._ending.loaded(meta, call)
        return self._result(call, now_ms)

    def unload(self, now_ms: int) -> TxnResult:
        """The partition moved to another coordinator; the shard is finished."""
        self._timers.clear()
        self._ending.clear()
        return TxnResult()

    def append_durable(self, append_token: TxnAppendToken | None) -> None:
        """The batch of ``append_token`` (and every batch before it) is durable."""
        if append_token is None:
            return
        for batch_id in sorted(b for b in self._in_flight if b <= append_token.batch_id):
            for write in self._in_flight.pop(batch_id):
                self._apply(write.transactional_id, write.transit)
                transit = write.transit
                if transit is not None and transit.state in PREPARED:
                    self._ending.prepared(write.transactional_id, transit.partitions)

    def append_failed(
        self, append_token: TxnAppendToken | None, error: ErrorCode, now_ms: int
    ) -> TxnResult:
        """The batch was not stored: its ids keep their state, its requests get the error."""
        call = Call()
        writes = [] if append_token is None else self._in_flight.pop(append_token.batch_id, [])
        answered = answer_error(error)
        for write in writes:
            meta = self._txns.get(write.transactional_id)
            if meta is not None:
                meta.pending = None
                if write.fence:
                    meta.failed_epoch_fence = True
                if write.transit is not None and write.transit.state in (
                    TxnState.COMPLETE_COMMIT,
                    TxnState.COMPLETE_ABORT,
                ):
                    self._ending.complete_failed(write.transactional_id)
                    self._arm_retry(now_ms)
            for reply_to, answer in write.replies:
                call.replies.append((reply_to, failed_answer(answer, answered)))
        return self._result(call, now_ms)

    def _apply(self, transactional_id: str, transit: Transit | None) -> None:
        """A record takes effect: the one path of records written and loaded."""
        if transit is None or transit.state is TxnState.DEAD:
            self._txns.pop(transactional_id, None)
            self._ending.forget(transactional_id)
            return
        meta = self._txns.get(transactional_id)
        if meta is None:
            meta = self._txns[transactional_id] = TxnMetadata(transactional_id, transit.producer_id)
        meta.apply(transit)

    def _result(self, call: Call, now_ms: int) -> TxnResult:
        self._arm_checks(now_ms)
        result = call.to_result(self._batch_ids)
        if result.append_token is not None:
            self._in_flight[result.append_token.batch_id] = call.writes
        return result
