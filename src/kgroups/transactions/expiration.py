"""What the shard's periodic checks end: ongoing transactions past their
timeout, and transactional ids idle past ``transactional.id.expiration.ms``."""

from __future__ import annotations

from collections.abc import Iterable

from kgroups.transactions.state import TxnMetadata, TxnState


def timed_out(txns: Iterable[TxnMetadata], now_ms: int) -> list[TxnMetadata]:
    """Transactions older than their timeout: to abort, their producer fenced."""
    return [
        meta
        for meta in txns
        if meta.state is TxnState.ONGOING
        and meta.pending is None
        and meta.start_ms + meta.timeout_ms < now_ms
    ]


def expired(txns: Iterable[TxnMetadata], now_ms: int, id_expiration_ms: int) -> list[TxnMetadata]:
    """Ids without a transaction, idle for ``id_expiration_ms``: to tombstone."""
    horizon = now_ms - id_expiration_ms
    return [
        meta
        for meta in txns
        if meta.state.expiration_allowed and meta.pending is None and meta.last_update_ms <= horizon
    ]
