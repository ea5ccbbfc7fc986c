"""Partition leadership in the cluster store: election, takeover and handover.

A partition is led by one incarnation of a broker (its id and lease epoch) under
a leader epoch. Every change of leader bumps the leader epoch, conditionally on
the epoch it read, so of two brokers electing at once only one change lands
per partition, and the old leader's next append is refused by the store.

- ``elect_leaders``: any live broker may run it, at any time. It gives every
  partition whose leader's lease is gone (or that never had one) to the broker
  ``spread_leaders`` names. A partition with a live leader is moved only by
  that leader, to even the spread (a broker that joined or came back): it
  finds its ``surplus``, stops serving it, and then gives it away here
  (``give_away``). No broker ever takes a partition from a live one, so the
  old leader has stopped answering for it (its groups included) before the
  new one can start: there is no moment with two.
- ``hand_over``: controlled shutdown. The leaving broker ends its own lease
  and gives its partitions to the others, in one transaction.

A lease that ran out never comes back to life (renewal requires it live, a new
registration has a new lease epoch), so "the leader's lease is gone", once read,
stays true until the partition's row changes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kgroups.cluster.broker_leases import end_lease, live_brokers_in
from kgroups.cluster.leader_spread import TopicPartition, spread_leaders
from kgroups.postgres_store.errors import LeaseExpired
from kgroups.postgres_store.store import Cur, Store


@dataclass(frozen=True, slots=True)
class PartitionLeader:
    topic: str
    partition: int
    topic_id: uuid.UUID
    leader_id: int | None  # None: no broker holding a live lease leads it
    leader_lease_epoch: int | None  # the lease epoch of that broker's incarnation
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class _Row:
    topic: str
    partition: int
    topic_id: uuid.UUID
    leader_id: int | None
    leader_lease_epoch: int | None
    leader_epoch: int


def partition_leaders(store: Store) -> list[PartitionLeader]:
    """Every partition with its live leader (Metadata, FindCoordinator)."""

    def work(cur: Cur) -> list[PartitionLeader]:
        live = {b.broker_id: b.lease_epoch for b in live_brokers_in(cur, store)}
        leaders = []
        for r in _rows(cur):
            leader = _live_leader(r, live)
            lease = None if leader is None else r.leader_lease_epoch
            leaders.append(
                PartitionLeader(r.topic, r.partition, r.topic_id, leader, lease, r.leader_epoch)
            )
        return leaders

    return store.transaction(work)


def elect_leaders(
    store: Store, *, giver: int | None = None, give_away: frozenset[TopicPartition] = frozenset()
) -> list[PartitionLeader]:
    """Give leaderless partitions a live leader, and the partitions of
    ``give_away`` still led by broker ``giver`` the leader the spread names;
    returns the changes that this call made."""
    return store.transaction(lambda cur: elect_in(cur, store, giver, give_away))


def surplus(store: Store, broker_id: int) -> frozenset[TopicPartition]:
    """The partitions this broker leads that the spread would give to another."""

    def work(cur: Cur) -> frozenset[TopicPartition]:
        current, target, _live, _rows = _spread(cur, store)
        return frozenset(
            tp for tp, now in current.items() if now == broker_id and target.get(tp) != broker_id
        )

    return store.transaction(work)


def hand_over(store: Store, broker_id: int, lease_epoch: int) -> list[PartitionLeader]:
    """End this broker's lease and move its partitions to the live brokers."""

    def work(cur: Cur) -> list[PartitionLeader]:
        if not end_lease(cur, store, broker_id, lease_epoch):
            raise LeaseExpired(broker_id, lease_epoch)
        return elect_in(cur, store)

    return store.transaction(work)


def elect_in(
    cur: Cur,
    store: Store,
    giver: int | None = None,
    give_away: frozenset[TopicPartition] = frozenset(),
) -> list[PartitionLeader]:
    """``elect_leaders`` within the caller's transaction."""
    current, target, live, rows = _spread(cur, store)
    changes: list[_Row] = []
    for r in rows:
        tp = (r.topic, r.partition)
        now, wanted = current[tp], target.get(tp)
        if wanted is None or wanted == now:
            continue
        if now is not None and not (now == giver and tp in give_away):
            continue  # only its live leader, having let go of it, gives it away
        changes.append(r)
    if not changes:
        return []
    cur.execute(
        """UPDATE kgroups_partitions p
           SET leader_id = c.leader_id, leader_lease_epoch = c.lease_epoch,
               leader_epoch = p.leader_epoch + 1
           FROM unnest(%(ids)s::uuid[], %(parts)s::int[], %(epochs)s::int[],
                       %(leaders)s::int[], %(leases)s::bigint[])
                AS c(topic_id, partition, leader_epoch, leader_id, lease_epoch)
           WHERE p.topic_id = c.topic_id AND p.partition = c.partition
               AND p.leader_epoch = c.leader_epoch
           RETURNING p.topic_id, p.partition, p.leader_id, p.leader_lease_epoch,
               p.leader_epoch""",
        {
            "ids": [r.topic_id for r in changes],
            "parts": [r.partition for r in changes],
            "epochs": [r.leader_epoch for r in changes],
            "leaders": [target[(r.topic, r.partition)] for r in changes],
            "leases": [live[target[(r.topic, r.partition)]] for r in changes],
        },
    )
    names = {(r.topic_id, r.partition): r.topic for r in changes}
    done = [
        PartitionLeader(names[(tid, p)], int(p), tid, int(leader), int(lease), int(epoch))
        for tid, p, leader, lease, epoch in cur.fetchall()
    ]
    return sorted(done, key=lambda c: (c.topic, c.partition))


def _spread(
    cur: Cur, store: Store
) -> tuple[dict[TopicPartition, int | None], dict[TopicPartition, int], dict[int, int], list[_Row]]:
    """Each partition's live leader, the leader the spread names, the live
    brokers' lease epochs and the rows read."""
    live = {b.broker_id: b.lease_epoch for b in live_brokers_in(cur, store)}
    rows = _rows(cur)
    current: dict[TopicPartition, int | None] = {
        (r.topic, r.partition): _live_leader(r, live) for r in rows
    }
    return current, spread_leaders(current, live), live, rows


def _rows(cur: Cur) -> list[_Row]:
    cur.execute(
        """SELECT t.name, p.partition, p.topic_id, p.leader_id, p.leader_lease_epoch,
                  p.leader_epoch
           FROM kgroups_partitions p JOIN kgroups_topics t ON t.topic_id = p.topic_id
           ORDER BY t.name, p.partition"""
    )
    return [_Row(*row) for row in cur.fetchall()]


def _live_leader(row: _Row, live: dict[int, int]) -> int | None:
    if row.leader_id is None or live.get(row.leader_id) != row.leader_lease_epoch:
        return None
    return row.leader_id
