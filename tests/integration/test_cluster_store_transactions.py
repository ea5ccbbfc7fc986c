"""Transactions in partition logs kept in a real PostgreSQL: markers committed
with the log, the last stable offset and the aborted transactions taken over
by the next leader, retention and compaction."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from kgroups.clock import ManualClock
from kgroups.cluster.broker_leases import register
from kgroups.cluster.leadership import elect_leaders, partition_leaders
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import LogConfig
from kgroups.partitions.log import NotInMemory, PartitionRead
from kgroups.postgres_store.aborted_txns import aborted_transactions
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.home import StoreHome
from kgroups.postgres_store.producer_states import read_producers
from kgroups.postgres_store.reads import log_offsets, read
from kgroups.postgres_store.schema import MIGRATIONS, ensure_schema
from kgroups.postgres_store.store import Cur, Store
from kgroups.postgres_store.store_log import StoreLog
from kgroups.postgres_store.topics import create_topic
from kgroups.postgres_store.truncation import advance_log_start
from kgroups.records.batch import decode_records, encode_batch, iter_batches, read_header

TOPIC = "t"
TP = (TOPIC, 0)
NOW = 1_700_000_000_000
DAY_MS = 86_400_000


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


class Member:
    """The cluster member, as far as the home asks it: this broker leads ``TP``."""

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        self.epoch: int | None = None

    def writer(self) -> Writer | None:
        return self._writer

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        return self.epoch if (topic, partition) == TP else None

    def knows_partition(self, topic: str, partition: int) -> bool:
        return True

    def poke(self) -> None:
        pass


def leading(store: Store, **configs: str) -> tuple[Member, int]:
    create_topic(store, TOPIC, 1, configs)
    lease = register(store, 1, "PLAINTEXT://127.0.0.1:9001", 60_000, incarnation=uuid.uuid4())
    elect_leaders(store)
    return Member(Writer(1, lease)), partition_leaders(store)[0].leader_epoch


def next_leader_epoch(store: Store) -> int:
    """A takeover: the partition is led at a higher epoch from now on."""

    def bump(cur: Cur) -> int:
        cur.execute("UPDATE kgroups_partitions SET leader_epoch = leader_epoch + 1")
        cur.execute("SELECT leader_epoch FROM kgroups_partitions")
        row = cur.fetchone()
        assert row is not None
        return int(row[0])

    return store.transaction(bump)


def gain(
    url: str,
    store: Store,
    member: Member,
    epoch: int,
    config: LogConfig,
    clock: ManualClock,
    producer_expiration_ms: int = 7 * DAY_MS,
) -> tuple[StoreHome, StoreLog]:
    """A home that gains the partition, as the member does: the log's start and
    end and the producers' state, read from the store."""
    home = StoreHome(url, 1, member, AppendWaiters(), clock, producer_expiration_ms, 300_000, None)
    offsets = log_offsets(store, TOPIC, 0)
    producers = store.transaction(lambda cur: read_producers(cur, [TP]))
    member.epoch = epoch
    home.follow(
        {TP: epoch},
        {TOPIC: config},
        {TP: (offsets.log_start_offset, offsets.high_watermark)},
        producers,
    )
    return home, home.log(TOPIC, 0)


def data(*records: tuple[bytes, bytes | None]) -> bytes:
    return encode_batch([(k, v, (), NOW) for k, v in records])


def txn(pid: int, seq: int, *records: tuple[bytes, bytes | None]) -> bytes:
    return encode_batch(
        [(k, v, (), NOW) for k, v in records],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


async def append(home: StoreHome, payload: bytes) -> int:
    slog = home.log(TOPIC, 0)
    base = slog.append(payload, NOW).base_offset
    done = home.appended(TOPIC, 0, slog)
    assert done is not None
    await done
    return base


async def mark(home: StoreHome, pid: int, commit: bool, coordinator_epoch: int = 5) -> int:
    slog = home.log(TOPIC, 0)
    offset = slog.append_marker(pid, 0, coordinator_epoch, commit, NOW)
    done = home.appended(TOPIC, 0, slog)
    assert done is not None
    await done
    return offset


def stored_bases(store: Store) -> list[int]:
    return [read_header(b).base_offset for b in read(store, TOPIC, 0, 0, 1 << 30).batches]


def test_markers_commit_with_the_log_and_the_next_leader_takes_the_transactions_over(
    store_url: str, store: Store
) -> None:
    member, epoch = leading(store)
    clock = ManualClock(NOW)

    async def first_leader() -> None:
        home, slog = gain(store_url, store, member, epoch, LogConfig(), clock)
        try:
            assert await append(home, data((b"k", b"a"))) == 0
            assert await append(home, txn(7, 0, (b"k", b"x"), (b"k", b"y"))) == 1
            assert (slog.high_watermark, slog.last_stable_offset) == (3, 1)
            assert await append(home, txn(8, 0, (b"k", b"p"))) == 3
            assert await mark(home, 7, commit=False) == 4
            assert slog.last_stable_offset == 3  # producer 8's transaction is open
            assert slog.aborted_transactions(0, 5) == [(7, 1)]
            assert await append(home, data((b"k", b"b"))) == 5
        finally:
            await home.stop()  # as kill -9: nothing more is written

    async def next_leader() -> None:
        home, slog = gain(store_url, store, member, next_leader_epoch(store), LogConfig(), clock)
        try:
            assert (slog.high_watermark, slog.last_stable_offset) == (6, 3)
            # The abort is older than this leader's memory: the store's index answers.
            with pytest.raises(NotInMemory):
                slog.aborted_transactions(0, 6)
            assert await home.aborted_transactions(TOPIC, 0, 0, 6) == [(7, 1)]
            assert await home.aborted_transactions(TOPIC, 0, 0, 1) == []
            assert await home.aborted_transactions(TOPIC, 0, 5, 6) == []
            # A read_committed fetch of those batches stops at the last stable offset.
            (got,) = await home.read_many([PartitionRead(TOPIC, 0, 0, 1 << 20, max_offset=3)])
            assert isinstance(got, bytes)
            assert [h.base_offset for _pos, h in iter_batches(got)] == [0, 1]

            # Producer 7 begins again; a marker from an older coordinator is refused.
            assert await append(home, txn(7, 2, (b"k", b"z"))) == 6
            with pytest.raises(KafkaError) as fenced:
                slog.append_marker(7, 0, 4, True, NOW)
            assert fenced.value.error_code == ErrorCode.transaction_coordinator_fenced
            assert await mark(home, 8, commit=True) == 7
            assert slog.last_stable_offset == 6
            assert await mark(home, 7, commit=True) == 8
            assert slog.last_stable_offset == slog.high_watermark == 9
        finally:
            await home.stop()

    asyncio.run(first_leader())
    asyncio.run(next_leader())
    state = store.transaction(lambda cur: read_producers(cur, [TP]))[TP]
    assert state.ongoing == {}
    assert state.producers[7].coordinator_epoch == 5


def test_a_marker_not_committed_never_moves_the_next_leaders_lso(
    store_url: str, store: Store
) -> None:
    """The store refuses the old leader's commit of a marker (a takeover came
    first): the next leader finds the transaction open, and the coordinator's
    retry ends it there."""
    member, epoch = leading(store)
    clock = ManualClock(NOW)

    async def fenced_leader() -> None:
        home, slog = gain(store_url, store, member, epoch, LogConfig(), clock)
        try:
            await append(home, txn(7, 0, (b"k", b"x")))
            next_leader_epoch(store)
            slog.append_marker(7, 0, 5, False, NOW)
            done = home.appended(TOPIC, 0, slog)
            assert done is not None
            with pytest.raises(KafkaError) as refused:
                await done
            assert refused.value.error_code == ErrorCode.not_leader_or_follower
        finally:
            await home.stop()

    async def next_leader() -> None:
        epoch = partition_leaders(store)[0].leader_epoch
        home, slog = gain(store_url, store, member, epoch, LogConfig(), clock)
        try:
            assert (slog.high_watermark, slog.last_stable_offset) == (1, 0)
            assert await home.aborted_transactions(TOPIC, 0, 0, 1) == []
            assert await mark(home, 7, commit=False) == 1
            assert slog.last_stable_offset == 2
            assert slog.aborted_transactions(1, 2) == [(7, 0)]
        finally:
            await home.stop()

    asyncio.run(fenced_leader())
    asyncio.run(next_leader())


def test_a_producer_with_an_open_transaction_is_not_expired(store_url: str, store: Store) -> None:
    member, epoch = leading(store)
    clock = ManualClock(NOW)

    def rows() -> set[int]:
        return set(store.transaction(lambda cur: read_producers(cur, [TP]))[TP].producers)

    async def run() -> None:
        home, slog = gain(store_url, store, member, epoch, LogConfig(), clock, DAY_MS)
        try:
            await append(home, txn(7, 0, (b"k", b"x")))
            clock.advance(2 * DAY_MS)
            await home.store_maintenance.apply_retention()
            assert slog.producers.get(7) is not None and rows() == {7}
            assert slog.last_stable_offset == 0
            await mark(home, 7, commit=True)
            await home.store_maintenance.apply_retention()
            assert slog.producers.get(7) is None and rows() == set()
        finally:
            await home.stop()

    asyncio.run(run())


def test_a_new_log_start_drops_the_aborts_wholly_before_it(store_url: str, store: Store) -> None:
    member, epoch = leading(store)
    clock = ManualClock(NOW)

    async def run() -> None:
        home, slog = gain(store_url, store, member, epoch, LogConfig(), clock)
        try:
            await append(home, txn(7, 0, (b"k", b"x")))  # 0
            await mark(home, 7, commit=False)  # 1
            await append(home, txn(9, 0, (b"k", b"y")))  # 2
            await append(home, data((b"k", b"a")))  # 3
            await mark(home, 9, commit=False)  # 4
            assert member.writer() is not None
            writer = member.writer()
            assert writer is not None
            start = advance_log_start(store, writer, TOPIC, 0, epoch, 3)
            slog.advance_log_start(start)
            assert slog.aborted_transactions(3, 5) == [(9, 2)]
        finally:
            await home.stop()

    asyncio.run(run())
    # Producer 7's abort lies wholly before the start; producer 9's reaches past it.
    assert aborted_transactions(store, TOPIC, 0, 0, 5) == [(9, 2)]


def test_compaction_stops_at_the_lso_drops_aborted_records_then_their_markers(
    store_url: str, store: Store
) -> None:
    member, epoch = leading(store, **{"cleanup.policy": "compact"})
    clock = ManualClock(NOW)
    # Any dirt is worth a round.
    config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.01)

    def values() -> list[tuple[int, bytes | None]]:
        batches = read(store, TOPIC, 0, 0, 1 << 30).batches
        return [
            (r.offset, r.value)
            for b in batches
            if not read_header(b).is_control
            for r in decode_records(b)
        ]

    async def run() -> None:
        home, slog = gain(store_url, store, member, epoch, config, clock)
        maintenance = home.store_maintenance
        try:
            await append(home, data((b"k1", b"a")))  # 0
            await append(home, txn(7, 0, (b"k1", b"aborted")))  # 1
            await append(home, data((b"k2", b"b")))  # 2
            await mark(home, 7, commit=False)  # 3
            await append(home, txn(8, 0, (b"k1", b"committed")))  # 4
            await mark(home, 8, commit=True)  # 5
            await append(home, txn(9, 0, (b"k2", b"open")))  # 6
            await append(home, data((b"k3", b"c")))  # 7
            assert slog.last_stable_offset == 6

            # Only the newest batch plays the active segment from now on (set
            # after the appends: a produce must fit in segment.bytes).
            slog.config = replace(config, segment_bytes=1)
            assert await maintenance.compact_all() == 1
            # Nothing from the open transaction on; the aborted record went, and
            # the newest committed k1 won over the older plain one. Both markers
            # stay: their transactions' batches were still there this round.
            assert stored_bases(store) == [2, 3, 4, 5, 6, 7]
            assert values() == [(2, b"b"), (4, b"committed"), (6, b"open"), (7, b"c")]
            assert aborted_transactions(store, TOPIC, 0, 0, 8) == [(7, 1)]

            slog.config = config
            await mark(home, 9, commit=True)  # 8
            await append(home, data((b"k4", b"d")))  # 9
            clock.advance(2 * DAY_MS)  # past delete.retention.ms
            slog.config = replace(config, segment_bytes=1)
            assert await maintenance.compact_all() == 1
            # The abort marker is left with nothing of its transaction: it goes,
            # with its index entry. The commit marker of 8 keeps its record's company.
            assert stored_bases(store) == [4, 5, 6, 7, 8, 9]
            assert values() == [(4, b"committed"), (6, b"open"), (7, b"c"), (9, b"d")]
            assert aborted_transactions(store, TOPIC, 0, 0, 10) == []
        finally:
            await home.stop()

    asyncio.run(run())


def test_a_store_of_the_previous_schema_keeps_its_producers_with_no_transaction_open(
    store_url: str,
) -> None:
    s = Store.connect(store_url)
    try:

        def at_version_5(cur: Cur) -> None:
            cur.execute("CREATE TABLE kgroups_schema (id INTEGER PRIMARY KEY, version INTEGER)")
            cur.execute("INSERT INTO kgroups_schema (id, version) VALUES (1, 5)")
            for statement in (st for migration in MIGRATIONS[:5] for st in migration):
                cur.execute(statement.encode())

        s.transaction(at_version_5)
        create_topic(s, TOPIC, 1)
        s.transaction(
            lambda cur: cur.execute(
                """INSERT INTO kgroups_producers (topic_id, partition, producer_id,
                       producer_epoch, last_timestamp, batches)
                   SELECT topic_id, 0, 7, 3, 1000, ''::bytea FROM kgroups_topics"""
            )
        )
        assert ensure_schema(s) == 5
        entry = s.transaction(lambda cur: read_producers(cur, [TP]))[TP].producers[7]
        assert (entry.epoch, entry.coordinator_epoch, entry.txn_first_offset) == (3, -1, -1)
        assert aborted_transactions(s, TOPIC, 0, 0, 10) == []
    finally:
        s.close()
