"""Produce-side verification of transactions (KIP-890 part 1).

Before a producer's first transactional batch of a transaction is written to a
partition, the broker asks the transaction coordinator whether the partition
was added to that transaction; a hanging transaction (data written after its
abort) cannot then start. ``broker.transactions`` is the coordinator's side of
it, None until one runs here (then every batch is accepted).
"""

from __future__ import annotations

from typing import Protocol

from kgroups.errors import ErrorCode

__all__ = ["TransactionVerifier"]


class TransactionVerifier(Protocol):
    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode:
        """NONE if the partition is part of the producer's ongoing transaction."""
        ...
