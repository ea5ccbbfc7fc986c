"""The transactional producer's state (the transaction half of the Java client's
TransactionManager), without any I/O: which calls are allowed when, which
partitions the coordinator already knows are in the transaction, and how a
broker's error moves the state.

    UNINITIALIZED -> INITIALIZING -> READY -> IN_TRANSACTION -> COMMITTING -> READY
                                                             -> ABORTING   -> READY
    any of them -> ABORTABLE_ERROR (only an abort is allowed) -> ABORTING
    any of them -> FATAL_ERROR (fenced or not authorized: nothing is allowed)

Errors are classified as the Java client does: being fenced (PRODUCER_FENCED,
INVALID_PRODUCER_EPOCH) or refused the transactional id is fatal; a
coordinator moving or busy (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS) is retried; anything
else fails the transaction, which must then be aborted.
"""

from __future__ import annotations

import enum

from kgroups.client.consumer_record import TopicPartition
from kgroups.client.exceptions import (
    AbortableTransactionError,
    FatalTransactionError,
    TransactionStateError,
)
from kgroups.errors import ErrorCode, KafkaError

__all__ = ["Retry", "TransactionManager", "TxnState"]


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


class Retry(enum.Enum):
    """What to do after a retriable error."""

    SAME_COORDINATOR = "retry"
    FIND_COORDINATOR = "rediscover"


_FATAL = frozenset(
    {
        ErrorCode.producer_fenced,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.transactional_id_authorization_failed,
    }
)
_FIND_COORDINATOR = frozenset({ErrorCode.not_coordinator, ErrorCode.coordinator_not_available})
_RETRY = frozenset(
    {
        ErrorCode.concurrent_transactions,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.request_timed_out,
        ErrorCode.network_exception,
    }
)


class TransactionManager:
    def __init__(self, transactional_id: str, transaction_timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.state = TxnState.UNINITIALIZED
        self.error: KafkaError | None = None
        self.partitions: set[TopicPartition] = set()
        """Partitions the coordinator has added to the current transaction."""
        self.offsets_added = False
        """Whether the current transaction holds a group's offsets."""

    # -- transitions the application asks for --------------------------------

    def begin_init(self) -> None:
        if self.state is not TxnState.INITIALIZING:
            self._require(TxnState.UNINITIALIZED, "init_transactions() is called once")
            self.state = TxnState.INITIALIZING

    def initialized(self) -> None:
        self.state = TxnState.READY

    def begin(self) -> None:
        self._raise_error()
        self._require(TxnState.READY, "begin_transaction() needs no transaction in progress")
        self.state = TxnState.IN_TRANSACTION

    def begin_commit(self) -> None:
        if self.state is TxnState.COMMITTING:
            return  # an earlier commit_transaction() timed out: carry on with it
        self._raise_error()
        self._require(TxnState.IN_TRANSACTION, "commit_transaction() needs a transaction")
        self.state = TxnState.COMMITTING

    def begin_abort(self) -> None:
        if self.state is TxnState.ABORTING:
            return
        if self.state is TxnState.FATAL_ERROR:
            self._raise_error()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR):
            self._require(TxnState.IN_TRANSACTION, "abort_transaction() needs a transaction")
        self.state = TxnState.ABORTING
        self.error = None

    def completed(self) -> None:
        """The coordinator ended the transaction (or there was nothing to end)."""
        self.state = TxnState.READY
        self.partitions.clear()
        self.offsets_added = False

    # -- checks ----------------------------------------------------------------

    def check_may_send(self) -> None:
        """send() and send_offsets_to_transaction() need a transaction in progress."""
        self._raise_error()
        self._require(TxnState.IN_TRANSACTION, "records are sent inside a transaction")

    @property
    def started(self) -> bool:
        """Whether the coordinator knows of the current transaction (so that ending
        it takes an EndTxn)."""
        return bool(self.partitions) or self.offsets_added

    def needs_adding(self, tp: TopicPartition) -> bool:
        return tp not in self.partitions

    def partitions_added(self, partitions: list[TopicPartition]) -> None:
        self.partitions.update(partitions)

    # -- errors ------------------------------------------------------------------

    def on_error(self, error: ErrorCode, message: str, *, fatal_otherwise: bool = False) -> Retry:
        """Classify a broker's error for a transactional request: returns how to
        retry, or moves to an error state and raises. ``fatal_otherwise`` makes
        unexpected errors fatal (EndTxn and InitProducerId, as Java)."""
        if error in _FIND_COORDINATOR:
            return Retry.FIND_COORDINATOR
        if error in _RETRY:
            return Retry.SAME_COORDINATOR
        if error in _FATAL or (fatal_otherwise and error != ErrorCode.transaction_abortable):
            name = "producer_fenced" if error == ErrorCode.invalid_producer_epoch else error.name
            self.fail_fatal(FatalTransactionError(error, f"{message}: {name}"))
        self.fail_abortable(AbortableTransactionError(error, f"{message}: {error.name}"))
        raise AssertionError("unreachable")

    def fail_fatal(self, error: KafkaError) -> None:
        self.note_fatal(error)
        raise error

    def fail_abortable(self, error: KafkaError) -> None:
        self.note_abortable(error)
        raise error

    def note_fatal(self, error: KafkaError) -> None:
        """Nothing more can succeed (the sender's way: it does not raise)."""
        self.state = TxnState.FATAL_ERROR
        self.error = error

    def note_abortable(self, error: KafkaError) -> None:
        """The transaction cannot commit any more (a batch or a request failed)."""
        if self.state not in (TxnState.FATAL_ERROR, TxnState.ABORTING):
            self.state = TxnState.ABORTABLE_ERROR
            self.error = error

    def _raise_error(self) -> None:
        if self.state in (TxnState.FATAL_ERROR, TxnState.ABORTABLE_ERROR):
            assert self.error is not None
            raise self.error

    def _require(self, state: TxnState, message: str) -> None:
        if self.state is not state:
            raise TransactionStateError(f"{message} (the producer is {self.state.value})")
