"""Sticky assignment when members subscribe to different topics.

Then a partition can only go to the members subscribed to its topic, and the
best counts are not known up front. The approach:

1. Each member keeps the partitions it owned of topics it still subscribes to
   (and, with racks, that have a replica on its rack).
2. The other partitions go to the least loaded subscriber of their topic,
   topics with the fewest subscribers first; with racks, to the least loaded
   subscriber on a replica's rack when there is one.
3. Then the load is balanced by moving partitions along chains: the most
   loaded member gives a partition of topic t1 to a subscriber of t1, which
   gives one of t2 to a subscriber of t2, ..., ending at a member with at least
   two partitions fewer than the first. Only the two ends change count. Chains
   are found by breadth-first search over members and topics, cheapest first,
   where passing on a partition a member got in this very rebalance is free
   and passing on one it owned before costs one move.

When no chain leaves the most loaded member, everyone it can reach has at most
one partition fewer and none of their partitions can go elsewhere, so they are
done and are left out from then on. When no member has a chain, no partition
can move to make the counts more even: the assignment is as balanced as the
subscriptions allow (a chain from a member to one with two fewer is exactly
what an uneven assignment needs; Harvey, Ladner, Lovasz and Tamir,
"Semi-matchings for bipartite graphs and load balancing", 2006).

Partitions within a topic are interchangeable for balance, so the search runs
over topics, not partitions, and most of the work is per topic.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from collections.abc import Sequence, Set
from itertools import compress

from kgroups.assignors.partition_space import PartitionSpace
from kgroups.assignors.sticky_racks import RackMatcher

__all__ = ["assign_heterogeneous_subscriptions"]

_FLIP = bytes.maketrans(b"\x00\x01", b"\x01\x00")

Holdings = list[dict[int, list[int]]]
"""Per member: topic id -> partition numbers."""


def assign_heterogeneous_subscriptions(
    space: PartitionSpace,
    subscribed: Sequence[Set[int]],
    owned: Sequence[Sequence[int]],
    previous_owner: array[int],
    racks: RackMatcher | None,
) -> tuple[list[list[int]], list[list[int]]]:
    """``subscribed[m]`` are the topic ids member ``m`` subscribes to,
    ``owned[m]`` the partitions it may keep, ``previous_owner`` who owned each
    partition before. Returns what each member keeps and what it newly gets."""
    members = len(owned)
    topic_of = space.topic_ids()
    subscribers: list[list[int]] = [[] for _ in space.topics]
    for member, topics in enumerate(subscribed):
        for topic in topics:
            subscribers[topic].append(member)

    kept: Holdings = [{} for _ in range(members)]
    new: Holdings = [{} for _ in range(members)]
    load = [0] * members
    taken = bytearray(space.size)
    for member, partitions in enumerate(owned):
        topics, holding = subscribed[member], kept[member]
        for partition in partitions:
            topic = topic_of[partition]
            if topic in topics and not (racks is not None and racks.mismatch(member, partition)):
                holding.setdefault(topic, []).append(partition)
                taken[partition] = 1
                load[member] += 1

    unowned = taken.translate(_FLIP)
    for topic in sorted(range(len(space.topics)), key=lambda t: (len(subscribers[t]), t)):
        start = space.offsets[topic]
        stop = start + space.counts[topic]
        partitions = list(compress(range(start, stop), unowned[start:stop]))
        if not partitions or not subscribers[topic]:
            continue
        if racks is None:
            _fill_evenly(topic, partitions, subscribers[topic], load, new)
        else:
            _fill_preferring_racks(topic, partitions, subscribers[topic], load, new, racks)

    _balance(subscribers, kept, new, load, previous_owner)
    return (
        [[p for ps in holding.values() for p in ps] for holding in kept],
        [[p for ps in holding.values() for p in ps] for holding in new],
    )


def _fill_evenly(
    topic: int, partitions: list[int], members: list[int], load: list[int], new: Holdings
) -> None:
    """Give the partitions one at a time to the least loaded member (the
    first in order among equals), computed as a water level."""
    count = len(partitions)
    loads = sorted(load[m] for m in members)

    def needed(level: int) -> int:
        return sum(level - x for x in loads if x < level)

    low, high = loads[0], loads[0] + count  # needed(high) >= count
    while low < high:
        middle = (low + high + 1) // 2
        if needed(middle) <= count:
            low = middle
        else:
            high = middle - 1
    level = low
    extra = count - needed(level)
    given = 0
    for member in members:
        if load[member] > level:
            continue
        share = level - load[member]
        if extra > 0:
            share += 1
            extra -= 1
        if share:
            new[member].setdefault(topic, []).extend(partitions[given : given + share])
            load[member] += share
            given += share


def _fill_preferring_racks(
    topic: int,
    partitions: list[int],
    members: list[int],
    load: list[int],
    new: Holdings,
    racks: RackMatcher,
) -> None:
    """Each partition to its least loaded member on one of its replicas' racks,
    or to its least loaded member when no member is on those racks."""
    by_rack: dict[str | None, list[tuple[int, int]]] = {}
    for member in members:
        by_rack.setdefault(racks.member_racks[member], []).append((load[member], member))
    everyone = [(load[m], m) for m in members]
    for heap in (everyone, *by_rack.values()):
        heapq.heapify(heap)

    def least_loaded(heap: list[tuple[int, int]]) -> tuple[int, int] | None:
        while heap and heap[0][0] != load[heap[0][1]]:
            heapq.heappop(heap)  # an entry from before the member's last partition
        return heap[0] if heap else None

    for partition in partitions:
        candidates = [
            entry
            for rack in racks.replica_racks[partition]
            if rack in by_rack and (entry := least_loaded(by_rack[rack])) is not None
        ]
        fallback = least_loaded(everyone)
        chosen = min(candidates) if candidates else fallback
        assert chosen is not None
        member = chosen[1]
        new[member].setdefault(topic, []).append(partition)
        load[member] += 1
        heapq.heappush(everyone, (load[member], member))
        heapq.heappush(by_rack[racks.member_racks[member]], (load[member], member))


def _balance(
    subscribers: list[list[int]],
    kept: Holdings,
    new: Holdings,
    load: list[int],
    previous_owner: array[int],
) -> None:
    active = [True] * len(load)
    while True:
        top = max((load[m] for m in range(len(load)) if active[m]), default=-1)
        if top < 0:
            return
        sources = [m for m in range(len(load)) if active[m] and load[m] == top]
        chain, reached = _cheapest_chain(sources, subscribers, kept, new, load, active)
        if chain is None:
            for member in reached:
                active[member] = False
            continue
        source, end = chain[0][0], chain[-1][2]
        runner_up = max((load[m] for m in range(len(load)) if active[m] and m != source), default=0)
        amount = min(
            min(len(new[u].get(t) or kept[u][t]) for u, t, _ in chain),
            (load[source] - load[end]) // 2,
            # Never take the source below the next most loaded member at once:
            # that member would then have to give to it, moving twice.
            max(1, load[source] - runner_up),
        )
        for giver, topic, taker in chain:
            _pass_on(giver, topic, taker, amount, kept, new, previous_owner)
        load[source] -= amount
        load[end] += amount


def _cheapest_chain(
    sources: list[int],
    subscribers: list[list[int]],
    kept: Holdings,
    new: Holdings,
    load: list[int],
    active: list[bool],
) -> tuple[list[tuple[int, int, int]] | None, list[int]]:
    """A cheapest chain from one of the most loaded ``sources`` (all equally
    loaded) to a member with at least two partitions fewer, as (giver, topic,
    taker) links; and every member reached. Breadth-first over a 0-1 weighted
    graph: free links to the front of the queue, costly ones to the back."""
    member_cost = dict.fromkeys(sources, 0)
    topic_cost: dict[int, int] = {}
    reached_via: dict[int, int] = {}  # member -> topic
    given_by: dict[int, int] = {}  # topic -> member
    queue: deque[tuple[int, int, bool]] = deque((0, m, True) for m in sources)
    while queue:
        cost, node, is_member = queue.popleft()
        if is_member:
            if cost > member_cost[node]:
                continue
            for topic in new[node].keys() | kept[node].keys():
                step = 0 if new[node].get(topic) else 1
                if cost + step < topic_cost.get(topic, cost + step + 1):
                    topic_cost[topic] = cost + step
                    given_by[topic] = node
                    if step:
                        queue.append((cost + step, topic, False))
                    else:
                        queue.appendleft((cost, topic, False))
        else:
            if cost > topic_cost[node]:
                continue
            for member in subscribers[node]:
                if active[member] and cost < member_cost.get(member, cost + 1):
                    member_cost[member] = cost
                    reached_via[member] = node
                    queue.appendleft((cost, member, True))

    ceiling = load[sources[0]] - 2
    ends = [m for m in member_cost if load[m] <= ceiling]
    if not ends:
        return None, list(member_cost)
    end = min(ends, key=lambda m: (member_cost[m], load[m], m))
    chain = []
    taker = end
    while taker not in sources:
        topic = reached_via[taker]
        giver = given_by[topic]
        chain.append((giver, topic, taker))
        taker = giver
    chain.reverse()
    return chain, list(member_cost)


def _pass_on(
    giver: int,
    topic: int,
    taker: int,
    amount: int,
    kept: Holdings,
    new: Holdings,
    previous_owner: array[int],
) -> None:
    """Move ``amount`` partitions of a topic, ones the giver got in this
    rebalance if it has any (the chain was priced that way)."""
    holding = new[giver] if new[giver].get(topic) else kept[giver]
    partitions = holding[topic]
    moving = partitions[-amount:]
    del partitions[-amount:]
    if not partitions:
        del holding[topic]
    for partition in moving:
        # A partition going back to the member that owned it is not a move.
        target = kept[taker] if previous_owner[partition] == taker else new[taker]
        target.setdefault(topic, []).append(partition)
