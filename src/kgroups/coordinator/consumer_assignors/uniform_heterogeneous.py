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
Step 2 hands each member a contiguous run of a topic at once instead of one
partition at a time: the same counts, without a per-partition loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from kgroups.coordinator.consumer_assignors.current_assignment import keep_valid_partitions
from kgroups.coordinator.consumer_assignors.load_balancer import LoadBalancer
from kgroups.coordinator.consumer_assignors.ordering import java_uuid_key
from kgroups.coordinator.consumer_assignors.spec import (
    Assignment,
    GroupAssignment,
    MemberSpec,
    TopicMetadata,
    partition_count,
)

__all__ = ["assign_heterogeneous"]

MAX_BALANCE_ROUNDS = 16

_Partitions = set[int] | frozenset[int]


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
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member in enumerate(members):
            for topic_id in member.subscribed_topic_ids:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.counts = {t: partition_count(topics, t) for t in self.subscribers}
        kept = keep_valid_partitions(members, self.counts)
        self.kept: list[Assignment] = kept.assignments
        self.claimed = kept.claimed
        self.sizes = kept.sizes
        self.changed: list[dict[uuid.UUID, _Partitions] | None] = [None] * len(members)
        """Per member, once its assignment changes, a copy being edited."""

    def build(self) -> GroupAssignment:
        self._give_out_unassigned()
        self._balance()
        result: GroupAssignment = {}
        for index, member in enumerate(self.members):
            changed = self.changed[index]
            if changed is None:
                result[member.member_id] = self.kept[index]
            else:
                result[member.member_id] = {
                    t: p if isinstance(p, frozenset) else frozenset(p)
                    for t, p in changed.items()
                    if p
                }
        return result

    def _topics_in_order(self, topic_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        """Most partitions per subscriber first, then fewest subscribers, then
        topic id."""
        counts, subscribers = self.counts, self.subscribers
        return sorted(
            topic_ids,
            key=lambda t: (
                -counts[t] / len(subscribers[t]),
                len(subscribers[t]),
                java_uuid_key(t),
            ),
        )

    def _editable(self, member: int) -> dict[uuid.UUID, _Partitions]:
        changed = self.changed[member]
        if changed is None:
            changed = self.changed[member] = dict(self.kept[member])
        return changed

    def _give_out_unassigned(self) -> None:
        unassigned: dict[uuid.UUID, Sequence[int]] = {}
        for topic_id, count in self.counts.items():
            held = self.claimed[topic_id]
            if not held:
                if count:
                    unassigned[topic_id] = range(count)
            elif len(held) < count:
                unassigned[topic_id] = sorted(set(range(count)).difference(held))
        sizes = self.sizes
        for topic_id in self._topics_in_order(list(unassigned)):
            partitions = unassigned[topic_id]
            start = 0
            for member, grant in _water_fill(self.subscribers[topic_id], sizes, len(partitions)):
                run = partitions[start : start + grant]
                start += grant
                assignment = self._editable(member)
                before = assignment.get(topic_id)
                assignment[topic_id] = frozenset(run) if before is None else before.union(run)
                sizes[member] += grant

    def _balance(self) -> None:
        movable = [t for t, s in self.subscribers.items() if len(s) >= 2]
        if not movable:
            return
        ordered = self._topics_in_order(movable)
        last_moved = -1
        for _ in range(MAX_BALANCE_ROUNDS):
            for position, topic_id in enumerate(ordered):
                if position == last_moved:
                    return  # a whole round without a move
                if self._balance_topic(topic_id) or last_moved == -1:
                    last_moved = position

    def _balance_topic(self, topic_id: uuid.UUID) -> int:
        sizes = self.sizes
        balancer = LoadBalancer(self.subscribers[topic_id], sizes)
        if balancer.spread() <= 1:
            return 0
        # What each member may give up, highest partition last; taken as it
        # was when this topic's turn began.
        givable: dict[int, list[int]] = {}
        moved = 0
        while True:
            giver = balancer.next_most_loaded()
            offer: list[int] = []
            while giver != -1:
                offer = givable.get(giver) or self._givable(giver, topic_id, givable)
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
            self._move(topic_id, partition, giver, taker)
            moved += 1

    def _givable(
        self, member: int, topic_id: uuid.UUID, givable: dict[int, list[int]]
    ) -> list[int]:
        if member in givable:
            return givable[member]
        changed = self.changed[member]
        current = self.kept[member] if changed is None else changed
        offer = givable[member] = sorted(current.get(topic_id, ()))
        return offer

    def _move(self, topic_id: uuid.UUID, partition: int, giver: int, taker: int) -> None:
        source = self._editable(giver)
        left = source[topic_id]
        if isinstance(left, frozenset):
            left = source[topic_id] = set(left)
        left.discard(partition)
        target = self._editable(taker)
        gained = target.get(topic_id)
        if gained is None:
            target[topic_id] = {partition}
        else:
            if isinstance(gained, frozenset):
                gained = target[topic_id] = set(gained)
            gained.add(partition)
        self.sizes[giver] -= 1
        self.sizes[taker] += 1


def _water_fill(subscribers: list[int], sizes: list[int], count: int) -> list[tuple[int, int]]:
    """How many of ``count`` partitions each subscriber gets so that the least
    loaded rise evenly: (member, partitions) pairs, least loaded first."""
    if not count:
        return []
    order = sorted(subscribers, key=lambda m: (sizes[m], m))
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
