"""Checks of a request's producer and partitions: the producer id and epoch
it names, partitions that do not exist, and KIP-890's verification."""

from __future__ import annotations

from collections.abc import Callable

from kgroups.errors import ErrorCode
from kgroups.transactions.messages import TopicPartition
from kgroups.transactions.state import PREPARED, TxnMetadata

Errors = dict[TopicPartition, ErrorCode]


def producer_error(
    meta: TxnMetadata | None, producer_id: int, producer_epoch: int
) -> ErrorCode | None:
    """Whether the id's current producer sent the request."""
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if meta.producer_epoch != producer_epoch:
        return ErrorCode.producer_fenced
    return None


def unknown_partitions(
    partitions: tuple[TopicPartition, ...], partition_exists: Callable[[str, int], bool]
) -> Errors | None:
    """A request naming a partition that does not exist adds none of them."""
    unknown = {tp for tp in partitions if not partition_exists(*tp)}
    if not unknown:
        return None
    return {
        tp: ErrorCode.unknown_topic_or_partition
        if tp in unknown
        else ErrorCode.operation_not_attempted
        for tp in partitions
    }


def verified(
    meta: TxnMetadata | None, error: ErrorCode | None, partitions: tuple[TopicPartition, ...]
) -> Errors:
    """A partition leader asks whether these partitions are in the
    transaction (KIP-890); a pending write is not waited for. ``error`` is
    the producer's (``producer_error``)."""
    if error is None and meta is not None and meta.state in PREPARED:
        error = ErrorCode.concurrent_transactions
    if error is not None:
        return dict.fromkeys(partitions, error)
    assert meta is not None
    return {
        tp: ErrorCode.none if tp in meta.partitions else ErrorCode.transaction_abortable
        for tp in partitions
    }
