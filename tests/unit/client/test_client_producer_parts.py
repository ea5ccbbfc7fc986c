"""The producer's pieces: sticky partitioning, batching, sequence numbers."""

from __future__ import annotations

import itertools
import random

import pytest

from kgroups.client.accumulator import PendingRecord, RecordAccumulator, record_size
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.idempotence import IdempotenceState, next_sequence
from kgroups.client.partitioner import partition_for_key
from kgroups.client.sticky_partitioner import StickyPartitioner

TP = TopicPartition("t", 0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_keyless_records_stay_on_a_partition_for_about_a_batch() -> None:
    partitioner = StickyPartitioner(batch_size=1000, rng=random.Random(1))
    chosen = []
    for _ in range(100):
        p = partitioner.partition("t", [0, 1, 2, 3], 4)
        chosen.append(p)
        partitioner.on_append("t", p, 100, [0, 1, 2, 3], 4)
    runs = [chosen[i : i + 10] for i in range(0, 100, 10)]
    assert all(len(set(run)) == 1 for run in runs)  # 10 records of 100 bytes each
    assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))


def test_sticky_partitions_are_chosen_among_available_ones() -> None:
    partitioner = StickyPartitioner(batch_size=1, rng=random.Random(2))
    for _ in range(50):
        p = partitioner.partition("t", [2, 3], 4)
        assert p in (2, 3)
        partitioner.on_append("t", p, 10, [2, 3], 4)


def test_keyed_partitioning_is_the_java_clients() -> None:
    from kafka.partitioner.default import murmur2  # kafka-python's port of Java's

    for i in range(200):
        key = f"key-{i}".encode()
        assert partition_for_key(key, 12) == (murmur2(key) & 0x7FFFFFFF) % 12


def test_a_batch_is_ready_when_full_or_lingered() -> None:
    clock = Clock()
    acc = RecordAccumulator(batch_size=300, linger_ms=50, buffer_memory=10_000, clock=clock)
    wakeups = []
    acc.wakeup = lambda: wakeups.append(1)
    record = PendingRecord(None, b"x" * 100, (), 0, record_size(None, b"x" * 100, ()))
    acc.try_append(TP, record)
    assert wakeups == [1]  # a new batch: the sender must plan its linger
    ready, wait = acc.ready(clock.now)
    assert ready == [] and wait == pytest.approx(0.05)
    clock.now += 0.05
    assert acc.ready(clock.now)[0] == [TP]
    # A full batch is ready at once.
    other = TopicPartition("t", 1)
    for _ in range(3):
        acc.try_append(other, record)
    assert other in acc.ready(clock.now)[0]


def test_records_fill_a_batch_then_start_another() -> None:
    acc = RecordAccumulator(batch_size=400, linger_ms=0, buffer_memory=10_000, clock=Clock())
    futures = [acc.try_append(TP, PendingRecord(None, b"x" * 100, (), 0, 121)) for _ in range(5)]
    first = acc.drain(TP)
    second = acc.drain(TP)
    assert first is not None and second is not None
    assert len(first.records) == 2 and len(second.records) == 2
    assert acc.drain(TP) is not None and acc.drain(TP) is None
    assert all(f is not None for f in futures)


def test_buffer_memory_bounds_what_waits() -> None:
    acc = RecordAccumulator(batch_size=100, linger_ms=0, buffer_memory=250, clock=Clock())
    assert acc.try_append(TP, PendingRecord(None, b"x", (), 0, 200)) is not None
    assert acc.try_append(TP, PendingRecord(None, b"x", (), 0, 100)) is None
    with pytest.raises(TimeoutError):
        acc.append_blocking(TP, PendingRecord(None, b"x", (), 0, 100), timeout=0.05)
    batch = acc.drain(TP)
    assert batch is not None
    acc.complete(batch, 0, -1, None)
    assert acc.try_append(TP, PendingRecord(None, b"x", (), 0, 100)) is not None


def test_retried_batches_go_back_in_sequence_order_ahead_of_new_ones() -> None:
    acc = RecordAccumulator(batch_size=10, linger_ms=0, buffer_memory=10_000, clock=Clock())
    for _ in range(4):
        acc.try_append(TP, PendingRecord(None, b"x" * 10, (), 0, 31))
    batches = [acc.drain(TP) for _ in range(3)]
    for seq, batch in zip((0, 1, 2), batches, strict=True):
        assert batch is not None
        batch.base_sequence = seq
    acc.requeue(batches[2], 0)  # type: ignore[arg-type]
    acc.requeue(batches[0], 0)  # type: ignore[arg-type]
    acc.requeue(batches[1], 0)  # type: ignore[arg-type]
    order = [acc.drain(TP) for _ in range(4)]
    assert [b.base_sequence for b in order if b is not None] == [0, 1, 2, -1]


def test_sequences_count_records_and_wrap_like_the_brokers() -> None:
    state = IdempotenceState()
    state.set_producer(5, 0)
    assert state.assign(TP, 10) == 0
    assert state.assign(TP, 3) == 10
    assert next_sequence(2**31 - 2, 3) == 1


def test_a_batch_behind_an_acknowledged_one_is_known_stored() -> None:
    state = IdempotenceState()
    state.set_producer(5, 0)
    for _ in range(4):
        state.assign(TP, 10)
    assert not state.has_acknowledged(TP)  # the first batch must go alone
    state.acknowledged(TP, 0, 10)
    assert state.has_acknowledged(TP)
    state.acknowledged(TP, 20, 10)  # the third batch's answer came before the second's
    assert state.stored(TP, 10, 10)
    assert not state.stored(TP, 30, 10)
    assert not state.is_next_in_line(TP, 10)
    state.set_producer(5, 1)  # a new epoch forgets it all
    assert not state.stored(TP, 10, 10)


def test_a_first_batch_overtaken_by_a_later_one_is_not_assumed_stored() -> None:
    """A broker accepts any first sequence from a producer it does not know."""
    state = IdempotenceState()
    state.set_producer(5, 0)
    state.assign(TP, 10)
    state.assign(TP, 10)
    state.acknowledged(TP, 10, 10)
    assert not state.stored(TP, 0, 10)
