"""Which producer id and epoch InitProducerId gives a transactional id: its
epoch bumped, or a new producer id once the epoch is exhausted (KIP-360)."""

from __future__ import annotations

from collections.abc import Callable

from kgroups.transactions.messages import InitProducerId
from kgroups.transactions.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_TIMESTAMP
from kgroups.transactions.state import Transit, TxnMetadata, TxnState, is_epoch_exhausted


def may_recover(meta: TxnMetadata, producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: whether a producer naming its id and epoch may be given an epoch.

    It may if the id is new (no epoch yet), if it names the current producer
    id (its epoch is checked next), or if it names the previous one with the
    last epoch of it: a retry of the call that rotated the id."""
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or (producer_id == meta.last_producer_id and is_epoch_exhausted(producer_epoch))
    )


def initialized(
    meta: TxnMetadata, req: InitProducerId, now_ms: int, next_producer_id: Callable[[], int]
) -> Transit | None:
    """The id's Empty state with the producer id and epoch to give; None:
    the producer is fenced."""
    expected = req.producer_id != NO_PRODUCER_ID
    if is_epoch_exhausted(meta.producer_epoch) and (
        not expected or req.producer_epoch == meta.producer_epoch
    ):
        return meta.transit(
            TxnState.EMPTY,
            now_ms,
            producer_id=next_producer_id(),
            producer_epoch=0,
            last_producer_id=meta.producer_id,
            last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH,
            timeout_ms=req.transaction_timeout_ms,
            partitions=frozenset(),
            start_ms=NO_TIMESTAMP,
        )
    epochs = _next_epochs(meta, req.producer_epoch if expected else None)
    if epochs is None:
        return None
    epoch, last_epoch = epochs
    return meta.transit(
        TxnState.EMPTY,
        now_ms,
        last_producer_id=meta.producer_id,
        producer_epoch=epoch,
        last_producer_epoch=last_epoch,
        timeout_ms=req.transaction_timeout_ms,
        partitions=frozenset(),
        start_ms=NO_TIMESTAMP,
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
