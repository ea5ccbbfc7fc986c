"""A transactional id's state, as Kafka's transaction coordinator keeps it.

The states, their byte in ``__transaction_state`` and their names (what
DescribeTransactions and ListTransactions show) are Kafka's. A state may only
be entered from the states Kafka allows before it; ``TxnMetadata.pending``
is the state a record being written will bring, during which concurrent
requests are answered CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

from kgroups.transactions.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TransactionLogValue,
)

# Kafka's Short.MaxValue: an epoch this high cannot be bumped any more.
MAX_PRODUCER_EPOCH = 0x7FFF


class TxnState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    # Only ever pending: an InitProducerId or a timeout fences the producer of
    # an ongoing transaction before aborting it. Never stored.
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    def __init__(self, byte: int, state_name: str) -> None:
        self.byte = byte
        self.state_name = state_name

    @classmethod
    def from_byte(cls, byte: int) -> TxnState:
        for state in cls:
            if state.byte == byte:
                return state
        raise ValueError(f"unknown transaction state {byte}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.state_name == name:
                return state
        return None

    @property
    def expiration_allowed(self) -> bool:
        """An id in this state may expire once idle long enough."""
        return self in _NO_TRANSACTION


_NO_TRANSACTION = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})

VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: _NO_TRANSACTION,
    TxnState.ONGOING: _NO_TRANSACTION | {TxnState.ONGOING},
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: _NO_TRANSACTION,
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


class IllegalTransition(RuntimeError):
    """A transition Kafka's state machine does not have: a bug, never a client's error."""


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch for fencing: at MAX - 1 a new producer id is due."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(frozen=True, slots=True)
class Transit:
    """What a transactional id becomes once its record is durable."""

    state: TxnState
    producer_id: int
    producer_epoch: int
    last_producer_id: int
    last_producer_epoch: int
    timeout_ms: int
    partitions: frozenset[tuple[str, int]]
    start_ms: int
    last_update_ms: int

    def value(self) -> TransactionLogValue:
        return TransactionLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state.byte,
            partitions=None if self.state is TxnState.EMPTY else self.partitions,
            last_update_timestamp_ms=self.last_update_ms,
            start_timestamp_ms=self.start_ms,
        )

    @classmethod
    def from_value(cls, value: TransactionLogValue) -> Transit:
        return cls(
            state=TxnState.from_byte(value.state),
            producer_id=value.producer_id,
            producer_epoch=value.producer_epoch,
            last_producer_id=value.previous_producer_id,
            last_producer_epoch=NO_PRODUCER_EPOCH,
            timeout_ms=value.timeout_ms,
            partitions=value.partitions or frozenset(),
            start_ms=value.start_timestamp_ms,
            last_update_ms=value.last_update_timestamp_ms,
        )


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = TxnState.EMPTY
    # The producer id before the last rotation and the epoch before the last
    # bump (KIP-360: a retried InitProducerId is recognised by them).
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: frozenset[tuple[str, int]] = field(default_factory=frozenset)
    start_ms: int = NO_TIMESTAMP
    last_update_ms: int = NO_TIMESTAMP
    # The state a record being written brings (Kafka's pendingState).
    pending: TxnState | None = None
    # A fence whose record failed: its bumped epoch is kept, not bumped again.
    failed_epoch_fence: bool = False

    def transit(self, state: TxnState, now_ms: int, **changes: Any) -> Transit:
        """The transition to ``state``, checked against Kafka's state machine."""
        if self.pending is not None and self.pending is not TxnState.PREPARE_EPOCH_FENCE:
            raise IllegalTransition(f"{self.transactional_id}: a transition is pending")
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state} -> {state}")
        now = Transit(
            state=state,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_id=self.last_producer_id,
            last_producer_epoch=self.last_producer_epoch,
            timeout_ms=self.timeout_ms,
            partitions=self.partitions,
            start_ms=self.start_ms,
            last_update_ms=now_ms,
        )
        return dataclasses.replace(now, **changes) if changes else now

    def apply(self, transit: Transit) -> None:
        self.state = transit.state
        self.producer_id = transit.producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_id = transit.last_producer_id
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.partitions = transit.partitions
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.pending = None
        self.failed_epoch_fence = False


PREPARED = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})


def is_busy(meta: TxnMetadata) -> bool:
    """Whether a record of the id is being written, or will be: a prepared
    transaction's Complete record is pending from the moment its Prepare
    record is durable (as in Kafka), so requests wait for it."""
    return meta.pending is not None or meta.state in PREPARED
