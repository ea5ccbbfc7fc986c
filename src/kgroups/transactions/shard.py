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

A transaction ends in two steps: EndTxn (or a fence, or a timeout) writes
PrepareCommit/PrepareAbort and answers; once that is durable the shell
writes the transaction's markers to its partitions and reports them with
``markers_written``; when every partition has its marker the shard writes
CompleteCommit/CompleteAbort. A shard loaded with transactions in a Prepare
state writes their markers again (``finish_load``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from kgroups.cluster.placement import OFFSETS_TOPIC, partition_for_group
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.result import Record
from kgroups.coordinator.timers import TimerQueue
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
    ListedTransaction,
    ListTransactions,
    ListTransactionsAnswer,
    TopicPartition,
    client_error,
)
from kgroups.transactions.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kgroups.transactions.result import TxnAppendToken, TxnMarkers, TxnResult
from kgroups.transactions.state import (
    MAX_PRODUCER_EPOCH,
    Transit,
    TxnMetadata,
    TxnState,
    is_epoch_exhausted,
)

_PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})

# The shard's periodic checks and its retries, on one timer queue.
_ABORT_CHECK = "abort-timed-out"
_EXPIRY_CHECK = "expire-ids"
_RETRY = "retry"

# Partitions that cannot take a marker: the producer could not have written
# to them either, so they are done without one.
_MARKER_NOT_NEEDED = frozenset(
    {ErrorCode.unsupported_for_message_format, ErrorCode.unsupported_version}
)

# Marker errors after which the partition is tried again; after
# INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED a newer
# coordinator owns the transaction and this one stops sending.
_COORDINATOR_FENCED = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.transaction_coordinator_fenced}
)

# How Kafka answers a request whose record could not be appended.
_APPEND_ERRORS = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
}


@dataclass(slots=True)
class _Write:
    """One transactional id's record in a batch: its new state, or None (a tombstone)."""

    transactional_id: str
    transit: Transit | None
    # The requests answered once it is durable, and how to answer them if not.
    replies: list[tuple[object, Answer]] = field(default_factory=list)
    fence: bool = False


class _Call:
    """Collects what one call produces."""

    __slots__ = ("markers", "replies", "writes")

    def __init__(self) -> None:
        self.writes: list[_Write] = []
        self.replies: list[tuple[object, Answer]] = []
        self.markers: list[TxnMarkers] = []


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
        self._in_flight: dict[int, list[_Write]] = {}
        # Prepared transactions: the partitions still without their marker.
        self._awaiting_markers: dict[str, set[TopicPartition]] = {}
        # What to try again at the next retry: markers of these partitions,
        # the Complete record of these transactions.
        self._marker_retries: dict[str, set[TopicPartition]] = {}
        self._complete_retries: set[str] = set()

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
        call = _Call()
        error = self._init_producer_id(req, ctx, now_ms, call)
        if error is not None:
            answer = InitProducerIdAnswer(client_error("InitProducerId", ctx.api_version, error))
            call.replies.append((ctx.reply_to, answer))
        return self._result(call, now_ms)

    def _init_producer_id(
        self, req: InitProducerId, ctx: RequestContext, now_ms: int, call: _Call
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
        expected = req.producer_id != NO_PRODUCER_ID
        if _busy(meta):
            return ErrorCode.concurrent_transactions
        if expected and not _may_recover(meta, req.producer_id, req.producer_epoch):
            return ErrorCode.producer_fenced
        if meta.state is TxnState.ONGOING:
            # Fence the producer of the ongoing transaction and abort it; the
            # new one retries until the abort is written (and then gets an
            # epoch bumped once more, or a new producer id if that one is the last).
            answer = InitProducerIdAnswer(ErrorCode.concurrent_transactions)
            self._fence_and_abort(meta, now_ms, call, (ctx.reply_to, answer))
            return None
        if is_epoch_exhausted(meta.producer_epoch) and (
            not expected or req.producer_epoch == meta.producer_epoch
        ):
            transit = meta.transit(
                TxnState.EMPTY,
                now_ms,
                producer_id=self._next_producer_id(),
                producer_epoch=0,
                last_producer_id=meta.producer_id,
                last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH,
                timeout_ms=req.transaction_timeout_ms,
                partitions=frozenset(),
                start_ms=NO_TIMESTAMP,
            )
        else:
            epochs = _next_epochs(meta, req.producer_epoch if expected else None)
            if epochs is None:
                return ErrorCode.producer_fenced
            epoch, last_epoch = epochs
            transit = meta.transit(
                TxnState.EMPTY,
                now_ms,
                last_producer_id=meta.producer_id,
                producer_epoch=epoch,
                last_producer_epoch=last_epoch,
                timeout_ms=req.transaction_timeout_ms,
                partitions=frozenset(),
                start_ms=NO_TIMESTAMP,
            )
        answer = InitProducerIdAnswer(ErrorCode.none, transit.producer_id, transit.producer_epoch)
        self._write(meta, transit, call, (ctx.reply_to, answer))
        return None

    # -- AddPartitionsToTxn, AddOffsetsToTxn ---------------------------------

    def add_partitions(self, req: AddPartitions, ctx: RequestContext, now_ms: int) -> TxnResult:
        """One transaction of an AddPartitionsToTxn request; the shell merges
        the answers of a batched (v4+) request."""
        call = _Call()
        partitions = tuple(dict.fromkeys(req.partitions))
        errors = self._unknown_partitions(partitions)
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
        call = _Call()
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
        call: _Call,
        done: Answer | None = None,
    ) -> dict[TopicPartition, ErrorCode] | None:
        """The errors for every partition, or None if a record will answer
        (with ``done``, by default AddPartitionsToTxn's answer)."""
        if not req.transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        meta = self._txns.get(req.transactional_id)
        if error is None and meta is not None:
            if _busy(meta):
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
        self._write(meta, transit, call, (ctx.reply_to, done))
        return None

    def _unknown_partitions(
        self, partitions: tuple[TopicPartition, ...]
    ) -> dict[TopicPartition, ErrorCode] | None:
        """A request naming a partition that does not exist adds none of them."""
        unknown = {tp for tp in partitions if not self._partition_exists(*tp)}
        if not unknown:
            return None
        return {
            tp: ErrorCode.unknown_topic_or_partition
            if tp in unknown
            else ErrorCode.operation_not_attempted
            for tp in partitions
        }

    def _verify(
        self, req: AddPartitions, partitions: tuple[TopicPartition, ...]
    ) -> dict[TopicPartition, ErrorCode]:
        """A partition leader asks whether these partitions are in the
        transaction (KIP-890); a pending write is not waited for."""
        if not req.transactional_id:
            return dict.fromkeys(partitions, ErrorCode.invalid_request)
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        meta = self._txns.get(req.transactional_id)
        if error is None and meta is not None and meta.state in _PREPARED:
            error = ErrorCode.concurrent_transactions
        if error is not None:
            return dict.fromkeys(partitions, error)
        assert meta is not None
        return {
            tp: ErrorCode.none if tp in meta.partitions else ErrorCode.transaction_abortable
            for tp in partitions
        }

    def _producer_error(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        if self._loading:
            return ErrorCode.coordinator_load_in_progress
        meta = self._txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.producer_fenced
        return None

    # -- EndTxn ----------------------------------------------------------------

    def end_txn(self, req: EndTxn, ctx: RequestContext, now_ms: int) -> TxnResult:
        call = _Call()
        error = self._end_txn(req, ctx, now_ms, call)
        if error is not None:
            error = client_error("EndTxn", ctx.api_version, error)
            call.replies.append((ctx.reply_to, EndTxnAnswer(error)))
        return self._result(call, now_ms)

    def _end_txn(
        self, req: EndTxn, ctx: RequestContext, now_ms: int, call: _Call
    ) -> ErrorCode | None:
        if not req.transactional_id:
            return ErrorCode.invalid_request
        error = self._producer_error(req.transactional_id, req.producer_id, req.producer_epoch)
        if error is not None:
            return error
        meta = self._txns[req.transactional_id]
        if _busy(meta):
            # A retry while the transaction ends: the client waits for it.
            return ErrorCode.concurrent_transactions
        state = meta.state
        if state is TxnState.ONGOING:
            done = EndTxnAnswer(ErrorCode.none, meta.producer_id, meta.producer_epoch)
            self._prepare(meta, req.commit, now_ms, call, (ctx.reply_to, done))
            return None
        # A retry of an EndTxn whose answer was lost: the same decision is
        # answered as done; the other one is invalid.
        if state is (TxnState.COMPLETE_COMMIT if req.commit else TxnState.COMPLETE_ABORT):
            done = EndTxnAnswer(ErrorCode.none, meta.producer_id, meta.producer_epoch)
            call.replies.append((ctx.reply_to, done))
            return None
        return ErrorCode.invalid_txn_state

    # -- transitions -----------------------------------------------------------

    def _fence_and_abort(
        self,
        meta: TxnMetadata,
        now_ms: int,
        call: _Call,
        reply: tuple[object, Answer] | None,
    ) -> None:
        """Bump the epoch of an ongoing transaction's producer, then abort it.

        As in Kafka the bumped epoch takes effect at once (the fenced producer
        is refused from now on), and a fence whose record failed is not
        bumped again."""
        if not meta.failed_epoch_fence and meta.producer_epoch < MAX_PRODUCER_EPOCH:
            meta.producer_epoch += 1
        meta.last_producer_epoch = NO_PRODUCER_EPOCH
        meta.pending = TxnState.PREPARE_EPOCH_FENCE
        self._prepare(meta, False, now_ms, call, reply, fence=True)

    def _prepare(
        self,
        meta: TxnMetadata,
        commit: bool,
        now_ms: int,
        call: _Call,
        reply: tuple[object, Answer] | None,
        *,
        fence: bool = False,
    ) -> None:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        transit = meta.transit(state, now_ms)
        self._write(meta, transit, call, reply, fence=fence)
        call.markers.append(self._markers(meta.transactional_id, transit, transit.partitions))

    def _markers(
        self,
        transactional_id: str,
        transit: Transit | TxnMetadata,
        partitions: frozenset[TopicPartition],
    ) -> TxnMarkers:
        return TxnMarkers(
            transactional_id,
            transit.producer_id,
            transit.producer_epoch,
            self.coordinator_epoch,
            transit.state is TxnState.PREPARE_COMMIT,
            partitions,
        )

    def _write(
        self,
        meta: TxnMetadata,
        transit: Transit | None,
        call: _Call,
        reply: tuple[object, Answer] | None = None,
        *,
        fence: bool = False,
    ) -> None:
        meta.pending = TxnState.DEAD if transit is None else transit.state
        write = _Write(meta.transactional_id, transit, [] if reply is None else [reply], fence)
        call.writes.append(write)

    # -- markers ---------------------------------------------------------------

    def markers_written(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        errors: Mapping[TopicPartition, ErrorCode],
        now_ms: int,
    ) -> TxnResult:
        """The partition leaders answered the markers of a TxnMarkers.

        Partitions whose marker is written (or whose topic is gone) are done;
        those that failed are tried again after ``retry_backoff_ms``. Once
        every partition has its marker the transaction completes. A report
        for a transaction that moved on meanwhile is ignored."""
        call = _Call()
        meta = self._txns.get(transactional_id)
        awaiting = self._awaiting_markers.get(transactional_id)
        if (
            meta is None
            or awaiting is None
            or meta.producer_id != producer_id
            or meta.producer_epoch != producer_epoch
        ):
            return self._result(call, now_ms)
        for tp, error in errors.items():
            if (
                error is ErrorCode.none
                or error in _MARKER_NOT_NEEDED
                or (
                    error is ErrorCode.unknown_topic_or_partition
                    and not self._partition_exists(*tp)
                )
            ):
                awaiting.discard(tp)
            elif error in _COORDINATOR_FENCED:
                # A newer coordinator completes this transaction.
                del self._awaiting_markers[transactional_id]
                self._marker_retries.pop(transactional_id, None)
                return self._result(call, now_ms)
            elif tp in awaiting:
                self._marker_retries.setdefault(transactional_id, set()).add(tp)
                self._arm_retry(now_ms)
        if not awaiting:
            self._complete(meta, now_ms, call)
        return self._result(call, now_ms)

    def _complete(self, meta: TxnMetadata, now_ms: int, call: _Call) -> None:
        del self._awaiting_markers[meta.transactional_id]
        self._marker_retries.pop(meta.transactional_id, None)
        state = (
            TxnState.COMPLETE_COMMIT
            if meta.state is TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        self._write(meta, meta.transit(state, now_ms, partitions=frozenset()), call)

    def pending_markers(self) -> list[TxnMarkers]:
        """The markers of every prepared transaction not yet written (after a
        shell lost track of them, say)."""
        return [
            self._markers(txn_id, self._txns[txn_id], frozenset(partitions))
            for txn_id, partitions in self._awaiting_markers.items()
        ]

    # -- DescribeTransactions, ListTransactions --------------------------------

    def describe_transactions(
        self, transactional_ids: tuple[str, ...], ctx: RequestContext, now_ms: int
    ) -> TxnResult:
        """The ids of the request owned by this shard; the shell merges results."""
        call = _Call()
        described = []
        for txn_id in transactional_ids:
            meta = self._txns.get(txn_id)
            if not txn_id:
                described.append(DescribedTransaction(ErrorCode.invalid_request, txn_id))
            elif self._loading:
                described.append(
                    DescribedTransaction(ErrorCode.coordinator_load_in_progress, txn_id)
                )
            elif meta is None or meta.state is TxnState.DEAD:
                described.append(DescribedTransaction(ErrorCode.transactional_id_not_found, txn_id))
            else:
                described.append(
                    DescribedTransaction(
                        ErrorCode.none,
                        txn_id,
                        meta.state.state_name,
                        meta.timeout_ms,
                        meta.start_ms,
                        meta.producer_id,
                        meta.producer_epoch,
                        tuple(sorted(meta.partitions)),
                    )
                )
        call.replies.append((ctx.reply_to, tuple(described)))
        return self._result(call, now_ms)

    def list_transactions(
        self, req: ListTransactions, ctx: RequestContext, now_ms: int
    ) -> TxnResult:
        """This shard's transactions; the shell concatenates the shards' lists."""
        call = _Call()
        call.replies.append((ctx.reply_to, self._list(req, now_ms)))
        return self._result(call, now_ms)

    def _list(self, req: ListTransactions, now_ms: int) -> ListTransactionsAnswer:
        if self._loading:
            return ListTransactionsAnswer(ErrorCode.coordinator_load_in_progress)
        states = {name: TxnState.from_name(name) for name in dict.fromkeys(req.states)}
        unknown = tuple(name for name, state in states.items() if state is None)
        wanted = {state for state in states.values() if state is not None}
        pattern = None
        if req.transactional_id_pattern:
            try:
                pattern = re.compile(req.transactional_id_pattern)
            except re.error:
                return ListTransactionsAnswer(ErrorCode.invalid_regular_expression)
        producer_ids = set(req.producer_ids)
        listed = tuple(
            ListedTransaction(meta.transactional_id, meta.producer_id, meta.state.state_name)
            for meta in self._txns.values()
            if meta.state is not TxnState.DEAD
            and (not producer_ids or meta.producer_id in producer_ids)
            and (not req.states or meta.state in wanted)
            and (req.duration_ms < 0 or now_ms - meta.start_ms > req.duration_ms)
            and (pattern is None or pattern.fullmatch(meta.transactional_id) is not None)
        )
        return ListTransactionsAnswer(ErrorCode.none, unknown, listed)

    # -- timers ----------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        return self._timers.next_deadline()

    def nothing_due_before(self, ms: int) -> bool:
        return self._timers.nothing_due_before(ms)

    def on_timer(self, now_ms: int) -> TxnResult:
        """Run every check due at ``now_ms``."""
        call = _Call()
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
                self._retry(now_ms, call)
        return self._result(call, now_ms)

    def _abort_timed_out(self, now_ms: int, call: _Call) -> None:
        """Transactions older than their timeout are aborted, their producer fenced."""
        if self._loading:
            return
        for meta in list(self._txns.values()):
            if (
                meta.state is TxnState.ONGOING
                and meta.pending is None
                and meta.start_ms + meta.timeout_ms < now_ms
            ):
                self._fence_and_abort(meta, now_ms, call, None)

    def _expire_ids(self, now_ms: int, call: _Call) -> None:
        """Transactional ids idle for ``id_expiration_ms`` go, with a tombstone."""
        if self._loading:
            return
        horizon = now_ms - self.config.id_expiration_ms
        for meta in list(self._txns.values()):
            if (
                meta.state.expiration_allowed
                and meta.pending is None
                and meta.last_update_ms <= horizon
            ):
                self._write(meta, None, call)

    def _retry(self, now_ms: int, call: _Call) -> None:
        retries, self._marker_retries = self._marker_retries, {}
        for txn_id, partitions in retries.items():
            meta = self._txns.get(txn_id)
            awaiting = self._awaiting_markers.get(txn_id)
            if meta is not None and awaiting and meta.pending is None and partitions & awaiting:
                call.markers.append(self._markers(txn_id, meta, frozenset(partitions & awaiting)))
        completes, self._complete_retries = self._complete_retries, set()
        for txn_id in completes:
            meta = self._txns.get(txn_id)
            if meta is not None and meta.state in _PREPARED and meta.pending is None:
                self._awaiting_markers[txn_id] = set()
                self._complete(meta, now_ms, call)

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
        call = _Call()
        for meta in self._txns.values():
            if meta.state in _PREPARED:
                self._awaiting_markers[meta.transactional_id] = set(meta.partitions)
                call.markers.append(self._markers(meta.transactional_id, meta, meta.partitions))
        return self._result(call, now_ms)

    def unload(self, now_ms: int) -> TxnResult:
        """The partition moved to another coordinator; the shard is finished."""
        self._timers.clear()
        self._awaiting_markers.clear()
        self._marker_retries.clear()
        self._complete_retries.clear()
        return TxnResult()

    def append_durable(self, append_token: TxnAppendToken | None) -> None:
        """The batch of ``append_token`` (and every batch before it) is durable."""
        if append_token is None:
            return
        for batch_id in sorted(b for b in self._in_flight if b <= append_token.batch_id):
            for write in self._in_flight.pop(batch_id):
                self._apply(write.transactional_id, write.transit)
                transit = write.transit
                if transit is not None and transit.state in _PREPARED:
                    self._awaiting_markers[write.transactional_id] = set(transit.partitions)

    def append_failed(
        self, append_token: TxnAppendToken | None, error: ErrorCode, now_ms: int
    ) -> TxnResult:
        """The batch was not stored: its ids keep their state, its requests get the error."""
        call = _Call()
        writes = [] if append_token is None else self._in_flight.pop(append_token.batch_id, [])
        answer_error = _APPEND_ERRORS.get(error, error)
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
                    self._complete_retries.add(write.transactional_id)
                    self._arm_retry(now_ms)
            for reply_to, answer in write.replies:
                call.replies.append((reply_to, _failed(answer, answer_error)))
        return self._result(call, now_ms)

    def _apply(self, transactional_id: str, transit: Transit | None) -> None:
        """A record takes effect: the one path of records written and loaded."""
        if transit is None or transit.state is TxnState.DEAD:
            self._txns.pop(transactional_id, None)
            self._awaiting_markers.pop(transactional_id, None)
            return
        meta = self._txns.get(transactional_id)
        if meta is None:
            meta = self._txns[transactional_id] = TxnMetadata(transactional_id, transit.producer_id)
        meta.apply(transit)

    def _result(self, call: _Call, now_ms: int) -> TxnResult:
        self._arm_checks(now_ms)
        records: list[Record] = []
        replies = list(call.replies)
        for write in call.writes:
            key = encode_key(write.transactional_id)
            records.append(
                (key, None if write.transit is None else encode_value(write.transit.value()))
            )
            replies.extend(write.replies)
        token = None
        if records:
            token = TxnAppendToken(next(self._batch_ids))
            self._in_flight[token.batch_id] = call.writes
        return TxnResult(records, replies, token, call.markers)


def _busy(meta: TxnMetadata) -> bool:
    """Whether a record of the id is being written, or will be: a prepared
    transaction's Complete record is pending from the moment its Prepare
    record is durable (as in Kafka), so requests wait for it."""
    return meta.pending is not None or meta.state in _PREPARED


def _may_recover(meta: TxnMetadata, producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: whether a producer naming its id and epoch may be given an epoch.

    It may if the id is new (no epoch yet), if it names the current producer
    id (its epoch is checked next), or if it names the previous one with the
    last epoch of it: a retry of the call that rotated the id."""
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or (producer_id == meta.last_producer_id and is_epoch_exhausted(producer_epoch))
    )


def _next_epochs(meta: TxnMetadata, expected_epoch: int | None) -> tuple[int, int] | None:
    """The epoch to give and the one to remember as last; None: fenced."""
    bumped = meta.producer_epoch + 1
    if expected_epoch is None:
        return bumped, NO_PRODUCER_EPOCH
    if is_epoch_exhausted(meta.producer_epoch):
        return None
    if meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
        return bumped, meta.producer_epoch
    if expected_epoch == meta.last_producer_epoch:
        # A retry of a bump whose answer was lost: the same epoch again.
        return meta.producer_epoch, meta.last_producer_epoch
    return None


def _failed(answer: Answer, error: ErrorCode) -> Answer:
    if isinstance(answer, InitProducerIdAnswer):
        return InitProducerIdAnswer(error)
    if isinstance(answer, AddPartitionsAnswer):
        return AddPartitionsAnswer(answer.transactional_id, dict.fromkeys(answer.errors, error))
    if isinstance(answer, EndTxnAnswer):
        return EndTxnAnswer(error)
    return ErrorAnswer(error)
