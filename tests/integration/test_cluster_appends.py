"""Fenced, batched appends and reads of partition logs in a real PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.errors import ErrorCode, KafkaError
from kgroups.postgres_store.appends import Append, Appended, append, append_many
from kgroups.postgres_store.errors import (
    LeaseExpired,
    NotLeader,
    StoreUnavailable,
    UnknownPartition,
)
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.reads import batch_at_timestamp, log_offsets, read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.postgres_store.truncation import advance_log_start, retention_start
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


def batch(*values: bytes, timestamp: int = 1_000) -> bytes:
    # base_offset 7 and leader epoch 99: the store must overwrite both.
    return encode_batch(
        [(None, v, (), timestamp + i) for i, v in enumerate(values)],
        base_offset=7,
        partition_leader_epoch=99,
    )


def writer_leading(
    store: Store, *topics: tuple[str, int]
) -> tuple[Writer, dict[tuple[str, int], int]]:
    for name, partitions in topics:
        create_topic(store, name, partitions)
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", SESSION_MS, incarnation=uuid.uuid4())
    elect_leaders(store)
    epochs = {(p.topic, p.partition): p.leader_epoch for p in partition_leaders(store)}
    return Writer(1, lease), epochs


def values(batches: list[bytes]) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for b in batches for r in decode_records(b)]


def test_the_leader_appends_and_offsets_follow_on(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    first = append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"a", b"b"), batch(b"c")])
    second = append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"d")])
    assert first == Appended(base_offset=0, last_offset=2, log_start_offset=0)
    assert second == Appended(base_offset=3, last_offset=3, log_start_offset=0)
    got = read(store, "t", 0, 0, 1 << 20)
    assert values(got.batches) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    assert [read_header(b).partition_leader_epoch for b in got.batches] == [1, 1, 1]
    assert (got.offsets.log_start_offset, got.offsets.high_watermark) == (0, 4)


def test_many_partitions_in_one_transaction_each_get_their_answer(store: Store) -> None:
    writer, epochs = writer_leading(store, ("a", 2), ("b", 1))
    answers = append_many(
        store,
        writer,
        [
            Append("a", 0, epochs[("a", 0)], [batch(b"a0")]),
            Append("b", 0, epochs[("b", 0)], [batch(b"b0", b"b1")]),
            Append("a", 0, epochs[("a", 0)], [batch(b"a1")]),  # same partition again
            Append("a", 1, epochs[("a", 1)] + 5, [batch(b"stale")]),  # wrong epoch
            Append("nope", 0, 1, [batch(b"x")]),
        ],
    )
    assert answers[:3] == [Appended(0, 0, 0), Appended(0, 1, 0), Appended(1, 1, 0)]
    assert isinstance(answers[3], NotLeader)
    assert answers[3].error_code == ErrorCode.not_leader_or_follower
    assert answers[3].leader_epoch == epochs[("a", 1)]
    assert isinstance(answers[4], UnknownPartition)
    assert values(read(store, "a", 0, 0, 1 << 20).batches) == [(0, b"a0"), (1, b"a1")]
    assert read(store, "a", 1, 0, 1 << 20).batches == []  # the refused one wrote nothing


def test_an_append_expecting_another_log_end_is_refused_and_writes_nothing(
    store: Store,
) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    assert append_many(store, writer, [Append("t", 0, epoch, [batch(b"a")], expected_base=0)]) == [
        Appended(0, 0, 0)
    ]
    # A leader that believes the log ends at 0 again (it lost track) is refused.
    refused = append_many(store, writer, [Append("t", 0, epoch, [batch(b"b")], expected_base=0)])
    assert isinstance(refused[0], KafkaError)
    assert refused[0].error_code == ErrorCode.not_leader_or_follower
    assert values(read(store, "t", 0, 0, 1 << 20).batches) == [(0, b"a")]


def test_a_replaced_leader_cannot_append(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"kept")])
    # Broker 2 joins and the partition is moved to it (epoch bumped).
    lease2 = register(store, 2, "PLAINTEXT://127.0.0.1:9002", SESSION_MS, incarnation=uuid.uuid4())
    store.transaction(
        lambda cur: cur.execute(
            "UPDATE kgroups_partitions SET leader_id = 2, leader_lease_epoch = %s,"
            " leader_epoch = leader_epoch + 1",
            (lease2,),
        )
    )
    with pytest.raises(NotLeader) as refused:
        append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"lost")])
    assert (refused.value.leader_id, refused.value.leader_epoch) == (2, epochs[("t", 0)] + 1)
    new = append(store, Writer(2, lease2), "t", 0, epochs[("t", 0)] + 1, [batch(b"next")])
    assert new.base_offset == 1
    assert values(read(store, "t", 0, 0, 1 << 20).batches) == [(0, b"kept"), (1, b"next")]


def test_a_writer_whose_lease_ran_out_cannot_append(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    store.time_shift_ms = SESSION_MS + 1
    with pytest.raises(LeaseExpired):
        append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"late")])
    assert log_offsets(store, "t", 0).high_watermark == 0


def test_reads_are_bounded_by_max_bytes_but_return_one_batch_at_least(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    for i in range(40):
        append(store, writer, "t", 0, epochs[("t", 0)], [batch(bytes([i]) * 100)])
    one = len(read(store, "t", 0, 0, 1).batches[0])
    assert len(read(store, "t", 0, 0, 1).batches) == 1
    assert len(read(store, "t", 0, 5, 3 * one).batches) == 3
    everything = read(store, "t", 0, 0, 1 << 30).batches  # more rows than a first query asks
    assert [o for o, _ in values(everything)] == list(range(40))
    assert read(store, "t", 0, 40, 1 << 20).batches == []  # at the log end: nothing yet
    with pytest.raises(KafkaError) as out_of_range:
        read(store, "t", 0, 41, 1 << 20)
    assert out_of_range.value.error_code == ErrorCode.offset_out_of_range


def test_a_read_from_inside_a_batch_returns_that_batch(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"a", b"b", b"c"), batch(b"d")])
    assert [o for o, _ in values(read(store, "t", 0, 1, 1 << 20).batches)] == [0, 1, 2, 3]


def test_log_start_moves_forward_only_and_old_batches_go(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    append(store, writer, "t", 0, epoch, [batch(b"a", b"b"), batch(b"c"), batch(b"d")])
    assert advance_log_start(store, writer, "t", 0, epoch, 1) == 1
    assert advance_log_start(store, writer, "t", 0, epoch, 0) == 1  # never back
    offsets = log_offsets(store, "t", 0)
    assert (offsets.log_start_offset, offsets.high_watermark) == (1, 4)
    assert values(read(store, "t", 0, 1, 1 << 20).batches)[0] == (0, b"a")  # straddling batch
    assert advance_log_start(store, writer, "t", 0, epoch, 3) == 3
    assert [o for o, _ in values(read(store, "t", 0, 3, 1 << 20).batches)] == [3]
    with pytest.raises(KafkaError) as beyond:
        advance_log_start(store, writer, "t", 0, epoch, 5)
    assert beyond.value.error_code == ErrorCode.offset_out_of_range
    with pytest.raises(NotLeader):
        advance_log_start(store, writer, "t", 0, epoch + 1, 4)
    with pytest.raises(KafkaError) as gone:
        read(store, "t", 0, 2, 1 << 20)
    assert gone.value.error_code == ErrorCode.offset_out_of_range


def test_retention_and_list_offsets_by_time(store: Store) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    epoch = epochs[("t", 0)]
    append(
        store,
        writer,
        "t",
        0,
        epoch,
        [batch(b"old", timestamp=100), batch(b"mid", timestamp=200), batch(b"new", timestamp=300)],
    )
    found = batch_at_timestamp(store, "t", 0, 150)
    assert found is not None and read_header(found).base_offset == 1
    assert batch_at_timestamp(store, "t", 0, 301) is None
    assert retention_start(store, "t", 0, cutoff_ms=50, retention_bytes=-1) is None
    assert retention_start(store, "t", 0, cutoff_ms=250, retention_bytes=-1) == 2
    one = len(read(store, "t", 0, 0, 1).batches[0])
    assert retention_start(store, "t", 0, cutoff_ms=0, retention_bytes=2 * one) == 1
    assert retention_start(store, "t", 0, cutoff_ms=10_000, retention_bytes=-1) == 3


def test_a_lost_connection_answers_an_error_and_the_next_append_reconnects(
    store: Store, store_url: str
) -> None:
    writer, epochs = writer_leading(store, ("t", 1))
    append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"before")])
    pid = store.conn.info.backend_pid
    killer = Store.connect(store_url)
    killer.transaction(lambda cur: cur.execute("SELECT pg_terminate_backend(%s)", (pid,)))
    killer.close()
    with pytest.raises(StoreUnavailable) as lost:
        append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"unknown")])
    assert lost.value.error_code == ErrorCode.kafka_storage_error
    after = append(store, writer, "t", 0, epochs[("t", 0)], [batch(b"after")])
    assert after.base_offset == 1  # nothing was written by the failed attempt
    assert values(read(store, "t", 0, 0, 1 << 20).batches) == [(0, b"before"), (1, b"after")]
