"""Idempotent producers' state kept in the cluster store with the appends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.errors import KafkaError
from kgroups.partitions.producer_state import BatchMetadata, ProducerEntry
from kgroups.postgres_store.appends import Append, Appended, append_many
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.producer_states import expire_producers, producer_row, read_producers
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.records.batch import encode_batch


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


def entry(producer_id: int, epoch: int, *batches: tuple[int, int, int, int, int]) -> ProducerEntry:
    e = ProducerEntry(producer_id, epoch)
    e.batches.extend(BatchMetadata(*b) for b in batches)
    return e


def test_producer_rows_commit_with_the_append_and_only_with_it(store: Store) -> None:
    create_topic(store, "t", 1)
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", 9000, incarnation=uuid.uuid4())
    elect_leaders(store)
    writer, epoch = Writer(1, lease), partition_leaders(store)[0].leader_epoch
    batch = encode_batch([(None, b"v", (), 1_000)])
    first = entry(7, 0, (0, 0, 0, 0, 1_000))
    newer = entry(7, 0, (0, 0, 0, 0, 1_000), (1, 1, 1, 1, 2_000))
    other = entry(8, 3, (5, 9, 2, 6, 3_000))
    answers = append_many(
        store,
        writer,
        [
            Append("t", 0, epoch, [batch], producers=[producer_row(first)]),
            Append("t", 0, epoch, [batch], producers=[producer_row(newer), producer_row(other)]),
        ],
    )
    assert all(isinstance(a, Appended) for a in answers)
    # A refused append (a stale leader epoch) writes no producer row.
    refused = append_many(
        store, writer, [Append("t", 0, epoch - 1, [batch], producers=[producer_row(entry(9, 0))])]
    )
    assert isinstance(refused[0], KafkaError)

    state = store.transaction(lambda cur: read_producers(cur, [("t", 0)]))[("t", 0)]
    assert set(state.producers) == {7, 8}
    assert list(state.producers[7].batches) == list(newer.batches)
    assert (state.producers[8].epoch, list(state.producers[8].batches)) == (3, list(other.batches))

    assert store.transaction(lambda cur: expire_producers(cur, "t", 0, 2_500)) == 1
    state = store.transaction(lambda cur: read_producers(cur, [("t", 0)]))[("t", 0)]
    assert set(state.producers) == {8}
