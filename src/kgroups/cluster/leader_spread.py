"""Where partition leaders should be: spread evenly, moved as little as possible.

A pure function of the partitions' current leaders and the live brokers, so any
broker computing it from the same store contents gets the same answer.

Each topic is spread on its own (``__consumer_offsets`` and every data topic
alike): with ``n`` partitions over ``b`` brokers each broker leads ``n // b``
of them and ``n % b`` brokers lead one more. The "one more" goes to brokers
that already lead that many (nothing moves), then to the brokers leading the
fewest partitions over all topics so far, so that many small topics do not all
land on the lowest broker id. A broker keeps its current partitions up to its
share; only the surplus and the partitions without a live leader move.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

TopicPartition = tuple[str, int]


def spread_leaders(
    current: Mapping[TopicPartition, int | None], live: Iterable[int]
) -> dict[TopicPartition, int]:
    """The leader each partition should have; ``current`` maps to None when
    the partition has no live leader. Empty when no broker is live."""
    brokers = sorted(set(live))
    if not brokers:
        return {}
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in current:
        by_topic[topic].append(partition)
    load = dict.fromkeys(brokers, 0)
    spread: dict[TopicPartition, int] = {}
    for topic in sorted(by_topic):
        partitions = sorted(by_topic[topic])
        held: dict[int, list[int]] = {b: [] for b in brokers}
        for p in partitions:
            leader = current[(topic, p)]
            if leader in held:
                held[leader].append(p)
        base, extra = divmod(len(partitions), len(brokers))
        ranked = sorted(brokers, key=lambda b: (-min(len(held[b]), base + 1), load[b], b))
        share = {b: base + (1 if i < extra else 0) for i, b in enumerate(ranked)}
        orphans: list[int] = []
        for b in brokers:
            keep = held[b][: share[b]]
            orphans.extend(held[b][share[b] :])
            for p in keep:
                spread[(topic, p)] = b
            share[b] -= len(keep)
        orphans.extend(p for p in partitions if current[(topic, p)] not in held)
        orphans.sort()
        by_load = sorted(brokers, key=lambda b: (load[b], b))
        takers = [b for b in by_load for _ in range(share[b])]
        for p, b in zip(orphans, takers, strict=True):
            spread[(topic, p)] = b
        for p in partitions:
            load[spread[(topic, p)]] += 1
    return spread
