"""Requests to the transaction coordinator and its answers, free of wire versions.

The wire handlers build these from any version of the Kafka request and turn
the answers into the version the client spoke (``client_error`` does the one
error code that depends on the version).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroups.errors import ErrorCode
from kgroups.transactions.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class InitProducerId:
    transactional_id: str
    transaction_timeout_ms: int
    # KIP-360: a producer recovering from an error names its current id and epoch.
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class InitProducerIdAnswer:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class AddPartitions:
    """One transaction of AddPartitionsToTxn (v0-v3 carry one, v4+ several)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]
    # v4+: a broker asks whether the partitions are in the transaction (KIP-890).
    verify_only: bool = False


@dataclass(frozen=True, slots=True)
class AddPartitionsAnswer:
    transactional_id: str
    errors: dict[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class AddOffsets:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclass(frozen=True, slots=True)
class EndTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool


@dataclass(frozen=True, slots=True)
class EndTxnAnswer:
    error: ErrorCode
    # The transaction's producer, once its end is written (v5+ carry them).
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """AddOffsetsToTxn's answer."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    error: ErrorCode
    transactional_id: str
    # As Kafka, an error leaves the other fields at zero.
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class ListTransactions:
    states: tuple[str, ...] = ()
    producer_ids: tuple[int, ...] = ()
    # KIP-994 (v1+): only transactions running longer than this; -1: all.
    duration_ms: int = -1
    # v2+: only transactional ids this regular expression matches in full.
    transactional_id_pattern: str | None = None


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsAnswer:
    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTransaction, ...] = ()


Answer = (
    InitProducerIdAnswer
    | AddPartitionsAnswer
    | EndTxnAnswer
    | ErrorAnswer
    | tuple[DescribedTransaction, ...]
    | ListTransactionsAnswer
)

# The version from which each API knows PRODUCER_FENCED; before it, Kafka
# answers INVALID_PRODUCER_EPOCH (KIP-588).
_FENCED_FROM_VERSION = {
    "InitProducerId": 4,
    "AddPartitionsToTxn": 2,
    "AddOffsetsToTxn": 2,
    "EndTxn": 2,
}


def client_error(api: str, api_version: int, error: ErrorCode) -> ErrorCode:
    """``error`` as a client of this API version is told it."""
    if error is ErrorCode.producer_fenced and api_version < _FENCED_FROM_VERSION.get(api, 0):
        return ErrorCode.invalid_producer_epoch
    return error
