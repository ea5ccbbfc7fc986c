"""What one call into the transaction shard produces: the records it writes,
each with the requests it answers once durable, its other replies and the
markers to send; and the TxnResult made of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kgroups.coordinator.result import Record
from kgroups.transactions.messages import Answer
from kgroups.transactions.records import encode_key, encode_value
from kgroups.transactions.result import TxnAppendToken, TxnMarkers, TxnResult
from kgroups.transactions.state import Transit, TxnMetadata, TxnState

Reply = tuple[object, Answer]


@dataclass(slots=True)
class Write:
    """One transactional id's record in a batch: its new state, or None (a tombstone)."""

    transactional_id: str
    transit: Transit | None
    # The requests answered once it is durable, and how to answer them if not.
    replies: list[Reply] = field(default_factory=list)
    fence: bool = False


class Call:
    """Collects what one call produces."""

    __slots__ = ("markers", "replies", "writes")

    def __init__(self) -> None:
        self.writes: list[Write] = []
        self.replies: list[Reply] = []
        self.markers: list[TxnMarkers] = []

    def write(
        self,
        meta: TxnMetadata,
        transit: Transit | None,
        reply: Reply | None = None,
        fence: bool = False,
    ) -> None:
        """The id's record, to be written; the id is pending until it is durable."""
        meta.pending = TxnState.DEAD if transit is None else transit.state
        self.writes.append(
            Write(meta.transactional_id, transit, [] if reply is None else [reply], fence)
        )

    def to_result(self, batch_ids: Iterator[int]) -> TxnResult:
        """The records as one batch (named by the next of ``batch_ids``, if any)."""
        records: list[Record] = []
        replies = list(self.replies)
        for write in self.writes:
            key = encode_key(write.transactional_id)
            records.append(
                (key, None if write.transit is None else encode_value(write.transit.value()))
            )
            replies.extend(write.replies)
        token = TxnAppendToken(next(batch_ids)) if records else None
        return TxnResult(records, replies, token, self.markers)
