"""DescribeTransactions and ListTransactions: what a shard shows of its
transactional ids (the shell merges the shards' answers)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kgroups.errors import ErrorCode
from kgroups.transactions.messages import (
    DescribedTransaction,
    ListedTransaction,
    ListTransactions,
    ListTransactionsAnswer,
)
from kgroups.transactions.state import TxnMetadata, TxnState


def described(txn_id: str, meta: TxnMetadata | None, loading: bool) -> DescribedTransaction:
    if not txn_id:
        return DescribedTransaction(ErrorCode.invalid_request, txn_id)
    if loading:
        return DescribedTransaction(ErrorCode.coordinator_load_in_progress, txn_id)
    if meta is None or meta.state is TxnState.DEAD:
        return DescribedTransaction(ErrorCode.transactional_id_not_found, txn_id)
    return DescribedTransaction(
        ErrorCode.none,
        txn_id,
        meta.state.state_name,
        meta.timeout_ms,
        meta.start_ms,
        meta.producer_id,
        meta.producer_epoch,
        tuple(sorted(meta.partitions)),
    )


def listed(
    req: ListTransactions, txns: Iterable[TxnMetadata], now_ms: int
) -> ListTransactionsAnswer:
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
    return ListTransactionsAnswer(
        ErrorCode.none,
        unknown,
        tuple(
            ListedTransaction(meta.transactional_id, meta.producer_id, meta.state.state_name)
            for meta in txns
            if meta.state is not TxnState.DEAD
            and (not producer_ids or meta.producer_id in producer_ids)
            and (not req.states or meta.state in wanted)
            and (req.duration_ms < 0 or now_ms - meta.start_ms > req.duration_ms)
            and (pattern is None or pattern.fullmatch(meta.transactional_id) is not None)
        ),
    )
