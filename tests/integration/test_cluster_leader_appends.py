"""Appends whose offsets the leader assigned, as one statement: every partition
conditional on its epoch, the writer's lease and its log's end; the batches,
producers' rows and aborted transactions of a refused partition are not
written, those of the others are."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.producer_state import ProducerEntry
from kgroups.postgres_store.aborted_txns import AbortedTxn, aborted_transactions
from kgroups.postgres_store.appends import Append, Appended
from kgroups.postgres_store.errors import LeaseExpired, NotLeader, UnknownPartition
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.leader_appends import append_assigned
from kgroups.postgres_store.producer_states import producer_row, read_producers
from kgroups.postgres_store.reads import log_offsets, read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.records.batch import decode_records, encode_batch, read_header

SESSION_MS = 9000


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


def batch(*values: bytes, base_offset: int = 7, epoch: int = 99) -> bytes:
    return encode_batch(
        [(None, v, (), 1_000 + i) for i, v in enumerate(values)],
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


def leading(store: Store, *topics: tuple[str, int]) -> tuple[Writer, dict[tuple[str, int], int]]:
    for name, partitions in topics:
        create_topic(store, name, partitions)
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", SESSION_MS, incarnation=uuid.uuid4())
    elect_leaders(store)
    epochs = {(p.topic, p.partition): p.leader_epoch for p in partition_leaders(store)}
    return Writer(1, lease), epochs


def values(store: Store, topic: str, partition: int) -> list[tuple[int, bytes | None]]:
    got = read(store, topic, partition, 0, 1 << 20).batches
    return [(r.offset, r.value) for b in got for r in decode_records(b)]


def test_each_partition_gets_its_answer_and_a_refused_one_writes_nothing(store: Store) -> None:
    writer, epochs = leading(store, ("a", 3), ("b", 1))
    producer = ProducerEntry(7, 0)
    answers = append_assigned(
        store,
        writer,
        [
            Append("a", 0, epochs[("a", 0)], [batch(b"a0")], expected_base=0),
            Append("b", 0, epochs[("b", 0)], [batch(b"b0", b"b1")], expected_base=0),
            # Fenced: a stale epoch; its producer row and abort are not written.
            Append(
                "a",
                1,
                epochs[("a", 1)] - 1,
                [batch(b"stale")],
                expected_base=0,
                producers=[producer_row(producer)],
                aborted=[AbortedTxn(7, 0, 0, 1)],
            ),
            # The log does not end where this leader believes.
            Append("a", 2, epochs[("a", 2)], [batch(b"gap")], expected_base=5),
            Append("nope", 0, 1, [batch(b"x")], expected_base=0),
        ],
    )
    assert answers[:2] == [Appended(0, 0, 0), Appended(0, 1, 0)]
    assert isinstance(answers[2], NotLeader)
    assert answers[2].leader_epoch == epochs[("a", 1)]
    assert isinstance(answers[3], KafkaError)
    assert answers[3].error_code == ErrorCode.not_leader_or_follower
    assert isinstance(answers[4], UnknownPartition)
    assert values(store, "a", 0) == [(0, b"a0")]
    assert values(store, "b", 0) == [(0, b"b0"), (1, b"b1")]
    assert values(store, "a", 1) == values(store, "a", 2) == []
    assert [log_offsets(store, "a", p).high_watermark for p in range(3)] == [1, 0, 0]
    rows = store.transaction(lambda cur: read_producers(cur, [("a", 1)]))
    assert rows[("a", 1)].producers == {}
    assert aborted_transactions(store, "a", 1, 0, 10) == []


def test_appends_to_one_partition_land_in_order_stamped_with_offsets_and_epoch(
    store: Store,
) -> None:
    writer, epochs = leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    answers = append_assigned(
        store,
        writer,
        [
            Append("t", 0, epoch, [batch(b"a", b"b"), batch(b"c")], expected_base=0),
            Append("t", 0, epoch, [batch(b"d", base_offset=3, epoch=epoch)], expected_base=3),
        ],
    )
    assert answers == [Appended(0, 2, 0), Appended(3, 3, 0)]
    assert values(store, "t", 0) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    got = read(store, "t", 0, 0, 1 << 20).batches
    assert [read_header(b).partition_leader_epoch for b in got] == [epoch] * 3
    assert [read_header(b).base_offset for b in got] == [0, 2, 3]
    # The next append follows on; one expecting an older end is refused.
    more = [Append("t", 0, epoch, [batch(b"e")], expected_base=4)]
    assert append_assigned(store, writer, more) == [Appended(4, 4, 0)]
    again = append_assigned(store, writer, more)
    assert isinstance(again[0], KafkaError)
    assert values(store, "t", 0)[-1] == (4, b"e")


def test_appends_to_one_partition_must_follow_on(store: Store) -> None:
    writer, epochs = leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    with pytest.raises(ValueError, match="follow on"):
        append_assigned(
            store,
            writer,
            [
                Append("t", 0, epoch, [batch(b"a")], expected_base=0),
                Append("t", 0, epoch, [batch(b"b")], expected_base=5),
            ],
        )
    assert values(store, "t", 0) == []


def test_producer_rows_and_aborts_commit_with_their_batches(store: Store) -> None:
    writer, epochs = leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    first, newer = ProducerEntry(7, 0), ProducerEntry(7, 1)
    answers = append_assigned(
        store,
        writer,
        [
            Append("t", 0, epoch, [batch(b"a")], expected_base=0, producers=[producer_row(first)]),
            Append(
                "t",
                0,
                epoch,
                [batch(b"b")],
                expected_base=1,
                producers=[producer_row(newer), producer_row(ProducerEntry(8, 2))],
                aborted=[AbortedTxn(7, 0, 1, 2)],
            ),
        ],
    )
    assert answers == [Appended(0, 0, 0), Appended(1, 1, 0)]
    state = store.transaction(lambda cur: read_producers(cur, [("t", 0)]))[("t", 0)]
    assert {p: e.epoch for p, e in state.producers.items()} == {7: 1, 8: 2}
    assert aborted_transactions(store, "t", 0, 0, 2) == [(7, 0)]


def test_a_writer_whose_lease_ran_out_writes_nothing(store: Store) -> None:
    writer, epochs = leading(store, ("t", 1))
    store.time_shift_ms = SESSION_MS + 1
    answers = append_assigned(
        store, writer, [Append("t", 0, epochs[("t", 0)], [batch(b"late")], expected_base=0)]
    )
    assert isinstance(answers[0], LeaseExpired)
    assert log_offsets(store, "t", 0).high_watermark == 0
