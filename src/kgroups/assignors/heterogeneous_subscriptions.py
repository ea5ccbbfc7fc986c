"""Sticky assignment when members subscribe to different topics.

Then a partition can only go to the members subscribed to its topic, and the
best counts are not known up front. The approach:

1. Each member keeps the partitions it owned of topics it still subscribes to
   (and, with racks, that have a replica on its rack).
2. The other partitions go to the least loaded subscriber of their topic,
   topics with the fewest subscribers first; with racks, to the least loaded
   subscriber on a replica's rack when there is one.
3. Then the load is balanced by moving partitions along chains: a most
   loaded member gives a partition of topic t1 to a subscriber of t1, which
   gives one of t2 to a subscriber of t2, ..., ending at a member with at least
   two partitions fewer than the first. Only the two ends change count. Chains
   are cheapest first: passing on a partition a member got in this very
   rebalance is free, passing on one it owned before costs a move; then
   shorter is better. Each round searches from all the most loaded members at
   once (Dijkstra over members and topics) and follows as many chains as
   still work.

When no chain leaves the most loaded members, everyone they can reach has at
most one partition fewer and none of their partitions can go elsewhere, so
they are done and are left out from then on. When no member has a chain, no
partition can move to make the counts more even: the assignment is as balanced
as the subscriptions allow (a chain from a member to one with two fewer is
exactly what an uneven assignment needs; Harvey, Ladner, Lovasz and Tamir,
"Semi-matchings for bipartite graphs and load balancing", 2006).

Partitions within a topic are interchangeable for balance, so the search runs
over topics, not partitions, and most of the work is per topic.
"""

from __future__ import annotations

import heapq
from array import array
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
    """Each round searches from all the most loaded members at once and then
    moves along as many of the chains found as still work."""
    active = [True] * len(load)
    while True:
        top = max((load[m] for m in range(len(load)) if active[m]), default=-1)
        if top < 0:
            return
        sources = [m for m in range(len(load)) if active[m] and load[m] == top]
        links, reached = _cheapest_chains(sources, subscribers, kept, new, load, active)
        ends = [m for m in reached if load[m] <= top - 2]
        if not ends:
            for member in reached:
                active[member] = False
            continue
        runner_up = (
            top
            if len(sources) > 1
            else max((load[m] for m in range(len(load)) if active[m] and load[m] < top), default=0)
        )
        # The search links each topic to one source, but any source holding
        # the topic can start the chain: spread the chains over all of them.
        # Those that can give a partition they got in this rebalance go last,
        # to be taken first.
        givers: dict[int, list[int]] = {}
        for source in sources:
            for topic in kept[source]:
                if topic not in new[source]:
                    givers.setdefault(topic, []).append(source)
        for source in sources:
            for topic in new[source]:
                givers.setdefault(topic, []).append(source)
        for end in ends:
            if load[end] > top - 2:
                continue  # filled up by an earlier chain of this round
            chain = _chain_to(end, links)
            _, first_topic, first_taker = chain[0]
            source = _next_giver(givers[first_topic], first_topic, top, load, kept, new)
            if source < 0:
                continue
            chain[0] = (source, first_topic, first_taker)
            available = min(len(new[u].get(t) or kept[u].get(t) or ()) for u, t, _ in chain)
            if not available:
                continue
            amount = min(
                available,
                (top - load[end]) // 2,
                # Never take the source below the next most loaded member at
                # once: that member would then have to give to it, moving twice.
                max(1, top - runner_up),
            )
            for giver, topic, taker in chain:
                _pass_on(giver, topic, taker, amount, kept, new, previous_owner)
            load[source] -= amount
            load[end] += amount


def _next_giver(
    candidates: list[int], topic: int, top: int, load: list[int], kept: Holdings, new: Holdings
) -> int:
    """A source that is still the most loaded and still holds the topic, or -1.
    Sources that are not are dropped from ``candidates`` for the round."""
    while candidates:
        source = candidates[-1]
        if load[source] == top and (new[source].get(topic) or kept[source].get(topic)):
            return source
        candidates.pop()
    return -1


def _cheapest_chains(
    sources: list[int],
    subscribers: list[list[int]],
    kept: Holdings,
    new: Holdings,
    load: list[int],
    active: list[bool],
) -> tuple[dict[int, int], list[int]]:
    """The cheapest chains from the most loaded ``sources`` (all equally
    loaded) to the members they reach: a tree of links (member -> topic it is
    reached through, topic -> member that gives it; topics as ~t), and the
    members reached, cheapest first.

    Cheapest means fewest partitions moved that their giver owned before, then
    fewest links, then the least loaded end: Dijkstra's search over members
    and topics. It stops once it has as many ends as there are sources, since
    a round moves at most one chain's worth from each source, or once it has
    reached every possible end; when there is none it reaches everything it can.
    """
    ceiling = load[sources[0]] - 2
    wanted = min(len(sources), sum(1 for m in range(len(load)) if active[m] and load[m] <= ceiling))
    if not wanted:
        wanted = -1  # no end anywhere: reach everything to learn who is done
    best: dict[int, tuple[int, int]] = dict.fromkeys(sources, (0, 0))
    links: dict[int, int] = {}
    heap = [(0, 0, load[m], m) for m in sources]
    heapq.heapify(heap)
    reached = []
    while heap:
        cost, hops, _, node = heapq.heappop(heap)
        if best[node] < (cost, hops):
            continue
        if node >= 0:
            reached.append(node)
            if load[node] <= ceiling:
                wanted -= 1
                if not wanted:
                    break
            free, owned = new[node], kept[node]
            for topic in free:
                label = (cost, hops)
                if ~topic not in best or label < best[~topic]:
                    best[~topic] = label
                    links[~topic] = node
                    heapq.heappush(heap, (cost, hops, 0, ~topic))
            for topic in owned:
                label = (cost + 1, hops)
                if topic not in free and (~topic not in best or label < best[~topic]):
                    best[~topic] = label
                    links[~topic] = node
                    heapq.heappush(heap, (cost + 1, hops, 0, ~topic))
        else:
            # Members are first reached by their cheapest chain: topics leave
            # the heap cheapest first, and every member they lead to costs the same.
            label = (cost, hops + 1)
            for member in subscribers[~node]:
                if member not in best and active[member]:
                    best[member] = label
                    links[member] = node
                    heapq.heappush(heap, (cost, hops + 1, load[member], member))
    return links, reached


def _chain_to(end: int, links: dict[int, int]) -> list[tuple[int, int, int]]:
    """The (giver, topic, taker) links from a source down to ``end``."""
    chain = []
    taker = end
    while taker in links:
        topic = links[taker]
        giver = links[topic]
        chain.append((giver, ~topic, taker))
        taker = giver
    chain.reverse()
    return chain


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
