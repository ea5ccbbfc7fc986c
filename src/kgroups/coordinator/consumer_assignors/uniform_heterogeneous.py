"""The uniform assignor when members subscribe to different topics.

As Kafka's UniformHeterogeneousAssignmentBuilder, in three steps:

1. Members keep what they hold of the topics they still subscribe to.
2. The partitions nobody holds are given out topic by topic, the topics with
   the most partitions per subscriber first, each to the least loaded of the
   topic's subscribers (counting everything a member holds).
3. Partitions move from the most to the least loaded subscribers of a topic,
   topic after topic, until a whole round moves nothing (or 16 rounds).

A topic's subscribers then differ by at most one partition whenever they
share the same subscriptions; with overlapping subscriptions the result is
nearly balanced, as in Kafka. Members are numbered in member id order, which
makes the result independent of input order (Kafka follows hash-map order).

For speed, topics are numbered (see subscription_classes), and step 2 gives
out the next topics that have the same subscribers together, each member a
contiguous run: the same counts as one partition at a time, without a loop
per partition or a set per partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from operator import itemgetter

from kgroups.coordinator.consumer_assignors.load_balancer import LoadBalancer
from kgroups.coordinator.consumer_assignors.spec import (
    GroupAssignment,
    MemberSpec,
    TopicMetadata,
    partition_count,
)
from kgroups.coordinator.consumer_assignors.subscription_classes import SubscriptionClasses

__all__ = ["assign_heterogeneous"]

MAX_BALANCE_ROUNDS = 16

_Partitions = set[int] | frozenset[int]
_Run = tuple[int, Sequence[int]]
"""A topic number and some of its partitions."""


def assign_heterogeneous(
    members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata]
) -> GroupAssignment:
    """``members`` in member id order."""
    return _Builder(members, topics).build()


class _Builder:
    def __init__(
        self, members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata]
    ) -> None:
        self.members = members
        classes = SubscriptionClasses.of(members)
        self.topic_ids = classes.numbers.ids
        self.counts = [partition_count(topics, t) for t in self.topic_ids]
        self.subscribers = classes.subscribers()
        self.sizes = [0] * len(members)
        self.held: list[dict[int, _Partitions]] = []
        """Per member, topic number to partitions; sets once edited."""
        self.changed = bytearray(len(members))
        self.claimed: list[set[int]] = []
        self._keep_valid(classes)

    def _keep_valid(self, classes: SubscriptionClasses) -> None:
        numbers, counts, sizes, changed = classes.numbers, self.counts, self.sizes, self.changed
        allowed = [frozenset(topics) for topics in classes.topics]
        holders: list[list[int]] = [[] for _ in counts]
        for index, member in enumerate(self.members):
            subscribed = allowed[classes.member_class[index]]
            held: dict[int, _Partitions] = {}
            self.held.append(held)
            if not member.assignment:
                continue
            for topic_id, partitions in member.assignment.items():
                topic = numbers.get(topic_id)
                if topic is None or topic not in subscribed or not partitions:
                    changed[index] = 1
                    continue
                if max(partitions) >= counts[topic]:
                    changed[index] = 1
                    partitions = frozenset(p for p in partitions if p < counts[topic])
                    if not partitions:
                        continue
                held[topic] = partitions
                sizes[index] += len(partitions)
                holders[topic].append(index)
        for topic, members in enumerate(holders):
            sets = [self.held[m][topic] for m in members]
            union: set[int] = set().union(*sets)
            if sum(map(len, sets)) != len(union):
                self._first_claim_wins(topic, members)
            self.claimed.append(union)

    def _first_claim_wins(self, topic: int, members: list[int]) -> None:
        seen: set[int] = set()
        for member in members:
            held = self.held[member]
            partitions = held[topic]
            if seen.isdisjoint(partitions):
                seen |= partitions
                continue
            left = partitions - seen
            seen |= partitions
            self.sizes[member] -= len(partitions) - len(left)
            self.changed[member] = 1
            if left:
                held[topic] = left
            else:
                del held[topic]

    def build(self) -> GroupAssignment:
        self._give_out_unassigned()
        self._balance()
        ids = self.topic_ids
        result: GroupAssignment = {}
        for index, member in enumerate(self.members):
            if not self.changed[index]:
                result[member.member_id] = member.assignment
            else:
                result[member.member_id] = {
                    ids[t]: p if isinstance(p, frozenset) else frozenset(p)
                    for t, p in self.held[index].items()
                    if p
                }
        return result

    def _topics_in_order(self, topics: list[int]) -> list[int]:
        """Most partitions per subscriber first, then fewest subscribers, as
        Kafka; then, where Kafka goes by topic id, topics read by the same
        members together, in the order of their lowest topic id (topic
        numbers follow topic id order), so they can be given out at once."""
        counts, subscribers = self.counts, self.subscribers
        first_reader: dict[int, int] = {}
        for topic in topics:
            first_reader.setdefault(id(subscribers[topic]), topic)
        return sorted(
            topics,
            key=lambda t: (
                -counts[t] / len(subscribers[t]),
                len(subscribers[t]),
                first_reader[id(subscribers[t])],
                t,
            ),
        )

    def _give_out_unassigned(self) -> None:
        unassigned: dict[int, Sequence[int]] = {}
        for topic, count in enumerate(self.counts):
            held = self.claimed[topic]
            if not held:
                if count:
                    unassigned[topic] = range(count)
            elif len(held) < count:
                unassigned[topic] = sorted(set(range(count)).difference(held))
        # Consecutive topics read by the same members are given out at once.
        batch: list[_Run] = []
        readers: list[int] | None = None
        for topic in self._topics_in_order(list(unassigned)):
            if batch and self.subscribers[topic] is not readers:
                self._give_out(batch, readers or [])
                batch = []
            readers = self.subscribers[topic]
            batch.append((topic, unassigned[topic]))
        if batch:
            self._give_out(batch, readers or [])

    def _give_out(self, runs: list[_Run], subscribers: list[int]) -> None:
        sizes, held, changed = self.sizes, self.held, self.changed
        grants = _water_fill(subscribers, sizes, sum(len(p) for _, p in runs))
        run = start = 0
        for member, grant in grants:
            sizes[member] += grant
            changed[member] = 1
            assignment = held[member]
            while grant:
                topic, partitions = runs[run]
                taken = partitions[start : start + grant]
                start += len(taken)
                grant -= len(taken)
                if start == len(partitions):
                    run += 1
                    start = 0
                before = assignment.get(topic)
                assignment[topic] = frozenset(taken) if before is None else before.union(taken)

    def _balance(self) -> None:
        movable = [t for t, s in enumerate(self.subscribers) if len(s) >= 2]
        if not movable:
            return
        ordered = self._topics_in_order(movable)
        last_moved = -1
        for _ in range(MAX_BALANCE_ROUNDS):
            for position, topic in enumerate(ordered):
                if position == last_moved:
                    return  # a whole round without a move
                if self._balance_topic(topic) or last_moved == -1:
                    last_moved = position

    def _balance_topic(self, topic: int) -> int:
        sizes = self.sizes
        subscribers = self.subscribers[topic]
        loads = itemgetter(*subscribers)(sizes)
        if max(loads) - min(loads) <= 1:
            return 0
        balancer = LoadBalancer(subscribers, sizes)
        # What each member may give up, highest partition last; as it was
        # when this topic's turn began.
        givable: dict[int, list[int]] = {}
        moved = 0
        while True:
            giver = balancer.next_most_loaded()
            offer: list[int] = []
            while giver != -1:
                offer = givable.get(giver) or self._givable(giver, topic, givable)
                if offer:
                    break
                balancer.drop_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                return moved
            partition = offer.pop()
            taker = balancer.next_least_loaded()
            if balancer.balanced():
                return moved
            self._move(topic, partition, giver, taker)
            moved += 1

    def _givable(self, member: int, topic: int, givable: dict[int, list[int]]) -> list[int]:
        if member not in givable:
            givable[member] = sorted(self.held[member].get(topic, ()))
        return givable[member]

    def _move(self, topic: int, partition: int, giver: int, taker: int) -> None:
        source = self.held[giver]
        left = source[topic]
        if isinstance(left, frozenset):
            left = source[topic] = set(left)
        left.discard(partition)
        target = self.held[taker]
        gained = target.get(topic)
        if gained is None:
            target[topic] = {partition}
        else:
            if isinstance(gained, frozenset):
                gained = target[topic] = set(gained)
            gained.add(partition)
        self.sizes[giver] -= 1
        self.sizes[taker] += 1
        self.changed[giver] = self.changed[taker] = 1


def _water_fill(subscribers: list[int], sizes: list[int], count: int) -> list[tuple[int, int]]:
    """How many of ``count`` partitions each subscriber (ascending indices)
    gets so that the least loaded rise evenly, ties to the lower index:
    (member, partitions) pairs, least loaded first."""
    if not count:
        return []
    order = sorted(subscribers, key=sizes.__getitem__)
    level = sizes[order[0]]
    filled = 1
    left = count
    while left:
        while filled < len(order) and sizes[order[filled]] <= level:
            filled += 1
        ceiling = sizes[order[filled]] if filled < len(order) else level + left
        rise = min(left // filled, ceiling - level)
        if not rise:
            break
        level += rise
        left -= rise * filled
    grants = []
    for position, member in enumerate(order[:filled]):
        grant = level - sizes[member] + (1 if position < left else 0)
        if grant:
            grants.append((member, grant))
    return grants
