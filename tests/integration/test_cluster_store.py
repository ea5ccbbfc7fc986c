"""The cluster store against a real PostgreSQL: schema, leases, topics, leaders."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from kgroups.cluster.broker_leases import live_brokers, register, renew
from kgroups.cluster.leadership import (
    PartitionLeader,
    elect_in,
    elect_leaders,
    hand_over,
    partition_leaders,
    surplus,
)
from kgroups.errors import ErrorCode, KafkaError
from kgroups.postgres_store.errors import DuplicateBroker, LeaseExpired, StoreUnavailable
from kgroups.postgres_store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SchemaTooNew,
    ensure_schema,
)
from kgroups.postgres_store.store import Cur, Store, ending_stalled_transactions
from kgroups.postgres_store.topics import (
    add_partitions,
    create_topic,
    delete_topic,
    list_topics,
    set_topic_configs,
)

SESSION_MS = 9000
SLACK_MS = 2000  # more than the real time any of these tests takes


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.connect(store_url)
    ensure_schema(s)
    try:
        yield s
    finally:
        s.close()


def join(store: Store, broker_id: int, incarnation: uuid.UUID | None = None) -> int:
    listener = f"PLAINTEXT://127.0.0.1:{9000 + broker_id}"
    return register(store, broker_id, listener, SESSION_MS, incarnation=incarnation or uuid.uuid4())


def leaders(store: Store) -> dict[tuple[str, int], tuple[int | None, int]]:
    return {(p.topic, p.partition): (p.leader_id, p.leader_epoch) for p in partition_leaders(store)}


def test_schema_is_created_on_first_use_and_not_again(store_url: str) -> None:
    first, second = Store.connect(store_url), Store.connect(store_url)
    try:
        assert ensure_schema(first) == 0
        assert ensure_schema(second) == SCHEMA_VERSION
        create_topic(first, "t", 1)
        assert ensure_schema(first) == SCHEMA_VERSION
        assert [t.name for t in list_topics(second)] == ["t"]
    finally:
        first.close()
        second.close()


def at_version_4(cur: Cur) -> None:
    """The tables as the one-address release left them, with broker 1 registered."""
    cur.execute("CREATE TABLE kgroups_schema (id INTEGER PRIMARY KEY, version INTEGER)")
    cur.execute("INSERT INTO kgroups_schema (id, version) VALUES (1, 4)")
    for statement in (st for migration in MIGRATIONS[:4] for st in migration):
        cur.execute(statement.encode())
    cur.execute(
        """INSERT INTO kgroups_brokers (broker_id, lease_epoch, incarnation, listener,
                rack, lease_expires_at, registered_at)
            VALUES (1, 1, %s, '10.0.0.1:9092', NULL, now() + INTERVAL '1 hour', now())""",
        (uuid.uuid4(),),
    )


def test_a_migration_behind_a_long_transaction_does_not_stall_the_brokers(
    store_url: str,
) -> None:
    """The migration's ALTER TABLE waits for a transaction that read the table; the
    brokers' own reads, queued behind it meanwhile, are served in time all the same,
    and the migration is done once the long transaction ends."""
    s = Store.connect(store_url)
    s.transaction(at_version_4)
    long = psycopg.connect(store_url)
    long.execute("SELECT count(*) FROM kgroups_brokers")  # its transaction stays open
    outcome: list[object] = []

    def migrate() -> None:
        try:
            outcome.append(ensure_schema(s))
        except Exception as e:
            outcome.append(e)

    migration = threading.Thread(target=migrate)
    migration.start()
    try:
        time.sleep(0.5)  # the ALTER TABLE is waiting for its lock by now
        with psycopg.connect(store_url, autocommit=True) as other:
            other.execute("SET statement_timeout = 5000")
            assert other.execute("SELECT count(*) FROM kgroups_brokers").fetchone() == (1,)
    finally:
        long.rollback()
        migration.join(60)
        long.close()
    try:
        assert outcome == [4]
        (old,) = live_brokers(s)
        assert old.listeners is None
    finally:
        s.close()


def test_a_database_of_the_one_address_schema_is_migrated_and_its_brokers_still_reached(
    store_url: str,
) -> None:
    """A store written before brokers registered every listener: its schema is
    brought forward, a broker registered then is reached at its one address by
    the clients of the inter-broker listener only, and a new registration stores
    each listener's address."""
    s = Store.connect(store_url)
    try:
        s.transaction(at_version_4)
        assert ensure_schema(s) == 4
        (old,) = live_brokers(s)
        assert [old.address_on(name, "INTERNAL") for name in ("PLAINTEXT", "INTERNAL")] == [
            None,
            "10.0.0.1:9092",
        ]
        register(
            s,
            2,
            "10.0.0.2:9092",
            SESSION_MS,
            incarnation=uuid.uuid4(),
            listeners={"PLAINTEXT": "10.0.0.2:9092", "INTERNAL": "internal-2:9093"},
        )
        new = live_brokers(s)[1]
        assert [new.address_on(name, "PLAINTEXT") for name in ("INTERNAL", "SSL")] == [
            "internal-2:9093",
            None,
        ]
    finally:
        s.close()


def test_a_newer_schema_is_refused(store: Store) -> None:
    store.transaction(lambda cur: cur.execute("UPDATE kgroups_schema SET version = version + 1"))
    with pytest.raises(SchemaTooNew):
        ensure_schema(store)


def test_same_broker_id_twice_cannot_both_be_live(store: Store) -> None:
    first = join(store, 1)
    with pytest.raises(DuplicateBroker) as refused:
        join(store, 1)
    assert refused.value.error_code == ErrorCode.duplicate_broker_registration
    # Once the first lease has run out, the second registers, with a newer lease
    # epoch, and the first holder's renewals fail from then on.
    store.time_shift_ms = SESSION_MS + 1
    second = join(store, 1)
    assert second > first
    with pytest.raises(LeaseExpired):
        renew(store, 1, first, SESSION_MS)
    renew(store, 1, second, SESSION_MS)
    assert [(b.broker_id, b.lease_epoch) for b in live_brokers(store)] == [(1, second)]


def test_a_lost_registration_answer_can_be_retried(store: Store) -> None:
    incarnation = uuid.uuid4()
    first = join(store, 1, incarnation)
    assert join(store, 1, incarnation) == first + 1
    with pytest.raises(LeaseExpired):
        renew(store, 1, first, SESSION_MS)


def test_an_expired_lease_cannot_be_renewed(store: Store) -> None:
    epoch = join(store, 1)
    # Virtual time on the store's clock; SLACK_MS covers the real time the test takes.
    store.time_shift_ms = SESSION_MS - SLACK_MS
    renew(store, 1, epoch, SESSION_MS)  # live: extended from the store's now
    store.time_shift_ms = 2 * SESSION_MS - 2 * SLACK_MS
    assert [b.broker_id for b in live_brokers(store)] == [1]
    store.time_shift_ms = 2 * SESSION_MS
    assert live_brokers(store) == []
    with pytest.raises(LeaseExpired):
        renew(store, 1, epoch, SESSION_MS)


def test_topics_are_seen_by_every_connection_with_stable_ids(store_url: str) -> None:
    a, b = Store.connect(store_url), Store.connect(store_url)
    try:
        ensure_schema(a)
        created = create_topic(a, "orders", 3, {"cleanup.policy": "compact"})
        [seen] = list_topics(b)
        assert (seen.name, seen.topic_id, seen.partitions, seen.configs) == (
            "orders",
            created.topic_id,
            3,
            {"cleanup.policy": "compact"},
        )
        with pytest.raises(KafkaError) as exists:
            create_topic(b, "orders", 1)
        assert exists.value.error_code == ErrorCode.topic_already_exists
        delete_topic(b, "orders")
        assert list_topics(a) == []
    finally:
        a.close()
        b.close()


def test_partitions_grow_and_configs_change_for_every_broker(store: Store) -> None:
    create_topic(store, "t", 2, {"retention.ms": "1000"})
    add_partitions(store, "t", 5)
    set_topic_configs(store, "t", {"retention.ms": "2000", "cleanup.policy": "delete"})
    [topic] = list_topics(store)
    assert topic.partitions == 5
    assert topic.configs == {"retention.ms": "2000", "cleanup.policy": "delete"}
    join(store, 1)
    elect_leaders(store)
    assert sorted(p for (_, p), (leader, _) in leaders(store).items() if leader == 1) == [
        0,
        1,
        2,
        3,
        4,
    ]
    with pytest.raises(KafkaError) as shrink:
        add_partitions(store, "t", 5)
    assert shrink.value.error_code == ErrorCode.invalid_partitions


def test_election_spreads_leaders_and_takes_over_a_dead_brokers_partitions(store: Store) -> None:
    create_topic(store, "__consumer_offsets", 6)
    create_topic(store, "data", 3)
    for broker_id in (1, 2, 3):
        join(store, broker_id)
    elect_leaders(store)
    first = leaders(store)
    for topic, count in (("__consumer_offsets", 6), ("data", 3)):
        per_broker = [
            sum(1 for (t, _), (leader, _) in first.items() if t == topic and leader == b)
            for b in (1, 2, 3)
        ]
        assert per_broker == [count // 3] * 3
    assert all(epoch == 1 for _, epoch in first.values())

    # Brokers 1 and 3 keep renewing; broker 2 stops and its lease runs out.
    store.time_shift_ms = SESSION_MS - SLACK_MS
    for broker in live_brokers(store):
        if broker.broker_id != 2:
            renew(store, broker.broker_id, broker.lease_epoch, SESSION_MS)
    store.time_shift_ms = SESSION_MS + 1
    assert {(t, p): leader for (t, p), (leader, _) in leaders(store).items()} == {
        tp: (None if leader == 2 else leader) for tp, (leader, _) in first.items()
    }
    moved = elect_leaders(store)
    assert {(c.topic, c.partition) for c in moved} == {
        tp for tp, (leader, _) in first.items() if leader == 2
    }
    after = leaders(store)
    for tp, (leader, epoch) in after.items():
        if first[tp][0] == 2:
            assert leader in (1, 3) and epoch == 2
        else:
            assert (leader, epoch) == first[tp]  # nothing else moved
    assert elect_leaders(store) == []  # a second run (any broker) finds nothing to do


def test_a_returning_broker_gets_its_share_back_only_from_its_leader(store: Store) -> None:
    create_topic(store, "data", 4)
    join(store, 1)
    elect_leaders(store)
    assert {leader for leader, _ in leaders(store).values()} == {1}
    join(store, 2)
    assert elect_leaders(store) == []  # no live leader is moved by a takeover
    extra = surplus(store, 1)
    assert len(extra) == 2 and surplus(store, 2) == frozenset()
    # Only the leader itself gives its partitions away, and only those.
    assert elect_leaders(store, giver=2, give_away=extra) == []
    moved = elect_leaders(store, giver=1, give_away=extra)
    assert {(c.topic, c.partition) for c in moved} == extra
    assert {c.leader_id for c in moved} == {2}
    per_broker = [leader for leader, _ in leaders(store).values()]
    assert sorted(per_broker) == [1, 1, 2, 2]


def test_controlled_shutdown_hands_partitions_over_at_once(store: Store) -> None:
    create_topic(store, "data", 4)
    epochs = {b: join(store, b) for b in (1, 2)}
    elect_leaders(store)
    before = leaders(store)
    hand_over(store, 1, epochs[1])
    after = leaders(store)
    assert {leader for leader, _ in after.values()} == {2}
    for tp, (leader, epoch) in before.items():
        assert after[tp][1] == (epoch + 1 if leader == 1 else epoch)
    assert [b.broker_id for b in live_brokers(store)] == [2]
    with pytest.raises(LeaseExpired):
        renew(store, 1, epochs[1], SESSION_MS)


def test_two_brokers_electing_at_once_move_each_partition_once(store_url: str) -> None:
    first, second, watcher = (Store.connect(store_url) for _ in range(3))
    try:
        ensure_schema(first)
        create_topic(first, "data", 6)
        join(first, 1)
        join(first, 2)
        result: list[list[PartitionLeader]] = []
        with first.conn.transaction(), first.conn.cursor() as cur:
            mine = elect_in(cur, first)
            # The second election reads the partitions as leaderless (the first
            # has not committed) and then waits for the first one's row locks.
            racer = threading.Thread(target=lambda: result.append(elect_leaders(second)))
            racer.start()
            while not watcher.conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()[0]:  # type: ignore[index]
                time.sleep(0.01)
        racer.join()
        assert len(mine) == 6 and result == [[]]
        assert {epoch for _, epoch in leaders(first).values()} == {1}
    finally:
        for s in (first, second, watcher):
            s.close()


def test_a_transaction_left_idle_by_a_stalled_broker_ends_and_frees_its_rows(
    store: Store, store_url: str
) -> None:
    register(store, 1, "PLAINTEXT://h:1", 60_000, incarnation=uuid.uuid4())
    stalled = Store.connect(ending_stalled_transactions(store_url, 300))
    other_done = threading.Event()

    def lock_then_stall(cur: Cur) -> None:
        cur.execute("UPDATE kgroups_brokers SET rack = 'stalled' WHERE broker_id = 1")
        assert other_done.wait(10)  # paused before its commit

    outcome: list[BaseException] = []

    def run() -> None:
        try:
            stalled.transaction(lock_then_stall)
        except BaseException as e:
            outcome.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        time.sleep(0.1)
        with psycopg.connect(store_url, autocommit=True) as other:
            other.execute("SET lock_timeout = '10s'")
            other.execute("UPDATE kgroups_brokers SET rack = 'other' WHERE broker_id = 1")
    finally:
        other_done.set()
        thread.join(10)
    # The stalled one's commit fails as a store that cannot be reached, and it
    # connects again for its next transaction.
    assert [type(e) for e in outcome] == [StoreUnavailable]
    stalled.transaction(lambda cur: cur.execute("SELECT 1"))
    stalled.close()
    assert [b.rack for b in live_brokers(store)] == ["other"]
