"""What every call into the transaction coordinator returns.

Like the group coordinator's Result (coordinator/result.py): records to
append to the ``__transaction_state`` partition as one batch, and replies to
send once they are durable. Besides, the transaction markers to write, also
once the records are durable: a PrepareCommit or PrepareAbort is followed by
its markers, and the shell reports them written with ``markers_written``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroups.coordinator.result import Record
    from kgroups.transactions.messages import Answer, TopicPartition


@dataclass(frozen=True, slots=True)
class TxnMarkers:
    """One transaction's markers: a control batch for each partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


def by_leader(
    markers: Iterable[TxnMarkers], leader_of: Callable[[TopicPartition], int]
) -> dict[int, list[TxnMarkers]]:
    """The markers each broker is sent (one WriteTxnMarkers request each)."""
    sent: dict[int, dict[TxnMarkers, set[TopicPartition]]] = {}
    for txn in markers:
        for partition in txn.partitions:
            sent.setdefault(leader_of(partition), {}).setdefault(txn, set()).add(partition)
    return {
        leader: [
            TxnMarkers(
                t.transactional_id,
                t.producer_id,
                t.producer_epoch,
                t.coordinator_epoch,
                t.commit,
                frozenset(parts),
            )
            for t, parts in per_txn.items()
        ]
        for leader, per_txn in sent.items()
    }


@dataclass(eq=False, slots=True)
class TxnAppendToken:
    """Names one batch; handed back with ``append_durable`` or ``append_failed``."""

    batch_id: int


@dataclass(slots=True)
class TxnResult:
    """Append ``records`` as one batch; once durable send ``replies`` and write ``markers``."""

    records: list[Record] = field(default_factory=list)
    replies: list[tuple[object, Answer]] = field(default_factory=list)
    append_token: TxnAppendToken | None = None
    markers: list[TxnMarkers] = field(default_factory=list)
    producer: None = None
    """What the group shard's Result sets for transactional batches: the
    transaction log's own records are never written in one."""
