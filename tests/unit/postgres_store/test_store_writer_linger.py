"""The cluster store writer's group commit: what each store transaction
carries, with and without ``cluster.store.append.linger.ms`` (which holds
back a coordinator's commits only)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from kgroups.errors import KafkaError
from kgroups.partitions.config import LogConfig
from kgroups.postgres_store import writer as writer_module
from kgroups.postgres_store.appends import Append, Appended
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.store_log import StoreLog
from kgroups.postgres_store.writer import StoreWriter
from kgroups.records.batch import encode_batch


class SlowStore:
    """Stands for the writer's store thread: each transaction takes ``seconds``;
    what each one carried, as (partition, expected base) pairs."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.transactions: list[list[tuple[int, int | None]]] = []

    async def run(self, work: Callable[[object], list[Appended | KafkaError]]) -> Any:
        await asyncio.sleep(self.seconds)
        return work(None)

    def append(self, _store: object, _writer: Writer, appends: Sequence[Append]) -> Any:
        self.transactions.append([(a.partition, a.expected_base) for a in appends])
        return [
            Appended(a.expected_base or 0, (a.expected_base or 0) + len(a.batches) - 1, 0)
            for a in appends
        ]


def one_record() -> bytes:
    return encode_batch([(None, b"v", (), 1_000)])


async def commits(linger_ms: int, store: SlowStore, topic: str = "__consumer_offsets") -> None:
    """Partition 0 appends and waits; while that transaction is in flight,
    partition 1 appends; just after it is committed, partition 2 appends (as a
    client answered by it would)."""
    writer = StoreWriter(
        store,  # type: ignore[arg-type]
        lambda: Writer(1, 1),
        lambda _slog: None,
        lambda _slog: None,
        linger_ms,
    )
    logs = [StoreLog(topic, p, 0, 0, 0, LogConfig()) for p in range(3)]

    def request(p: int) -> asyncio.Future[None]:
        logs[p].append(one_record(), 1_000)
        return writer.request(logs[p])

    first = request(0)
    await asyncio.sleep(store.seconds / 2)
    second = request(1)
    await first
    third = request(2)
    await asyncio.gather(second, third)
    await writer.close()


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> SlowStore:
    slow = SlowStore(0.05)
    monkeypatch.setattr(writer_module, "append_assigned", slow.append)
    return slow


def test_an_append_after_a_commit_shares_the_next_transaction_with_those_that_waited(
    store: SlowStore,
) -> None:
    asyncio.run(commits(linger_ms=1_000, store=store))
    # The first commits at once; the linger (no longer than the last
    # transaction took) lets partition 2 join partition 1.
    assert store.transactions == [[(0, 0)], [(1, 0), (2, 0)]]


def test_without_linger_each_turn_commits_what_came_during_the_last(store: SlowStore) -> None:
    asyncio.run(commits(linger_ms=0, store=store))
    assert store.transactions == [[(0, 0)], [(1, 0)], [(2, 0)]]


def test_produced_batches_are_not_held_back(store: SlowStore) -> None:
    asyncio.run(commits(linger_ms=1_000, store=store, topic="t"))
    assert store.transactions == [[(0, 0)], [(1, 0)], [(2, 0)]]


def test_a_writer_that_went_idle_commits_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    store = SlowStore(0.5)
    monkeypatch.setattr(writer_module, "append_assigned", store.append)

    async def two_in_turn() -> float:
        writer = StoreWriter(
            store,  # type: ignore[arg-type]
            lambda: Writer(1, 1),
            lambda _slog: None,
            lambda _slog: None,
            1_000,
        )
        slog = StoreLog("__consumer_offsets", 0, 0, 0, 0, LogConfig())
        started = asyncio.get_running_loop().time()
        for _ in range(2):  # the second once the first is answered
            slog.append(one_record(), 1_000)
            await writer.request(slog)
        await writer.close()
        return asyncio.get_running_loop().time() - started

    # The store's own time; a linger would add the first's 0.5 s.
    assert asyncio.run(two_in_turn()) < 1.4
    assert store.transactions == [[(0, 0)], [(0, 1)]]
