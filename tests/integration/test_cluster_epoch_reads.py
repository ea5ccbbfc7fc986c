"""The leader epochs of a partition kept in the store, found by bisection of
its batches' headers, answer as the epochs of every batch read one by one."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import pytest

from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.partitions.leader_epochs import LeaderEpochs
from kgroups.postgres_store.appends import append
from kgroups.postgres_store.epoch_reads import end_offset_for_epoch, log_start_epoch
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.reads import log_offsets, read
from kgroups.postgres_store.schema import ensure_schema
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.topics import create_topic
from kgroups.postgres_store.truncation import advance_log_start
from kgroups.records.batch import encode_batch, read_header

SESSION_MS = 60_000


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


def leading(store: Store) -> tuple[Writer, int]:
    create_topic(store, "t", 1)
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", SESSION_MS, incarnation=uuid.uuid4())
    elect_leaders(store)
    (leader,) = partition_leaders(store)
    return Writer(1, lease), leader.leader_epoch


def new_epoch(store: Store, epoch: int) -> None:
    store.transaction(
        lambda cur: cur.execute("UPDATE kgroups_partitions SET leader_epoch = %s", (epoch,))
    )


def write(store: Store, writer: Writer, epoch: int, batches: int, rng: random.Random) -> int:
    end = 0
    for _ in range(batches):
        records = [(None, b"v", (), 1_000) for _ in range(rng.randint(1, 4))]
        end = append(store, writer, "t", 0, epoch, [encode_batch(records)]).last_offset + 1
    return end


def every_batch(store: Store, leader_epoch: int, epoch_start: int) -> tuple[LeaderEpochs, int]:
    """The epochs as a log rebuilt from all its batches knows them, and the log start."""
    result = read(store, "t", 0, log_offsets(store, "t", 0).log_start_offset, 1 << 30)
    known = LeaderEpochs()
    for batch in result.batches:
        header = read_header(batch)
        known.observe(header.partition_leader_epoch, header.base_offset)
    known.assign(leader_epoch, epoch_start)
    return known, result.offsets.log_start_offset


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bisection_answers_as_a_walk_through_every_batch(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    writer, epoch = leading(store)
    end = 0
    # Epochs that grow with gaps; some leaders write nothing.
    for _ in range(6):
        end = max(end, write(store, writer, epoch, rng.choice([0, 1, 7, 40]), rng))
        epoch += rng.randint(1, 3)
        new_epoch(store, epoch)
    current, epoch_start = epoch, end
    write(store, writer, current, 5, rng)
    if seed == 3:
        advance_log_start(store, writer, "t", 0, current, end // 2)
    known, start = every_batch(store, current, epoch_start)
    log_end = end + 100  # what the leader has committed since: only its own epoch ends there
    for asked in range(-1, current + 3):
        found = end_offset_for_epoch(store, "t", 0, asked, current, epoch_start, log_end)
        assert found == known.end_offset_for(asked, start, log_end), asked
    assert log_start_epoch(store, "t", 0, current, epoch_start) == (
        start,
        known.epoch_at_start(start),
    )


def test_an_empty_partition_knows_only_its_leader(store: Store) -> None:
    _writer, epoch = leading(store)
    assert end_offset_for_epoch(store, "t", 0, epoch - 1, epoch, 0, 0) == (epoch - 1, 0)
    assert end_offset_for_epoch(store, "t", 0, epoch, epoch, 0, 0) == (epoch, 0)
    assert log_start_epoch(store, "t", 0, epoch, 0) == (0, epoch)


def test_a_leader_that_wrote_before_failing_finds_its_own_epoch_earlier(store: Store) -> None:
    rng = random.Random(0)
    writer, epoch = leading(store)
    first = write(store, writer, epoch, 3, rng)
    new_epoch(store, epoch + 1)
    restart = write(store, writer, epoch + 1, 3, rng)
    # The log at epoch + 1 was started again from the store at ``restart``.
    assert end_offset_for_epoch(store, "t", 0, epoch, epoch + 1, restart, restart) == (
        epoch,
        first,
    )
