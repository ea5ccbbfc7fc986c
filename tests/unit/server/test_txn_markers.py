"""write_txn_markers: markers for __consumer_offsets go to the group coordinator."""

from __future__ import annotations

import asyncio
from typing import Any

from kgroups.errors import ErrorCode
from kgroups.handlers.txn_markers import TxnMarker, write_txn_markers


class Coordinator:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, int, bool]] = []

    async def complete_transaction(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
    ) -> ErrorCode:
        self.calls.append((partition, producer_id, producer_epoch, coordinator_epoch, commit))
        return ErrorCode.not_coordinator if partition == 9 else ErrorCode.none


class Broker:
    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator


def _markers() -> list[TxnMarker]:
    offsets = (("__consumer_offsets", 3), ("__consumer_offsets", 9))
    return [TxnMarker(7, 1, 4, True, offsets), TxnMarker(8, 0, 4, False, offsets[:1])]


def test_offsets_partitions_are_completed_by_the_group_coordinator() -> None:
    coordinator = Coordinator()
    results = asyncio.run(write_txn_markers(Broker(coordinator), _markers()))  # type: ignore[arg-type]
    assert results == [
        {
            ("__consumer_offsets", 3): ErrorCode.none,
            ("__consumer_offsets", 9): ErrorCode.not_coordinator,
        },
        {("__consumer_offsets", 3): ErrorCode.none},
    ]
    assert coordinator.calls == [(3, 7, 1, 4, True), (9, 7, 1, 4, True), (3, 8, 0, 4, False)]


def test_without_transactional_offsets_the_offsets_partitions_answer_an_error() -> None:
    results = asyncio.run(write_txn_markers(Broker(object()), _markers()))  # type: ignore[arg-type]
    assert set(results[0].values()) == {ErrorCode.unknown_server_error}
