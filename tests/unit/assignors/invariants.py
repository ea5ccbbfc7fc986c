"""Checks every assignor's answer must pass, stated independently of how the
assignors work."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping

from kgroups.assignors import Assignment, Subscription, TopicPartition


def assignable(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> set[TopicPartition]:
    """Every existing partition of a topic some member subscribes to."""
    topics = {t for s in subscriptions.values() for t in s.topics}
    return {
        TopicPartition(t, p) for t in topics for p in range(max(0, partitions_per_topic.get(t, 0)))
    }


def check_valid(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignments: Mapping[str, Assignment],
    *,
    complete: bool = True,
) -> None:
    """Every member has an entry; partitions go only to members subscribed to
    their topic, at most once (exactly once when ``complete``)."""
    assert set(assignments) == set(subscriptions)
    counted = Counter(tp for a in assignments.values() for tp in a.partitions)
    repeated = [tp for tp, n in counted.items() if n > 1]
    assert not repeated, f"assigned more than once: {repeated}"
    for member_id, assignment in assignments.items():
        topics = set(subscriptions[member_id].topics)
        for topic, partition in assignment.partitions:
            assert topic in topics, f"{member_id} got {topic} without subscribing"
            assert 0 <= partition < partitions_per_topic[topic]
    if complete:
        missing = assignable(partitions_per_topic, subscriptions) - set(counted)
        assert not missing, f"never assigned: {sorted(missing)}"


def counts(assignments: Mapping[str, Assignment]) -> dict[str, int]:
    return {m: len(a.partitions) for m, a in assignments.items()}


def check_evenly_balanced(assignments: Mapping[str, Assignment]) -> None:
    sizes = counts(assignments).values()
    if sizes:
        assert max(sizes) - min(sizes) <= 1, sorted(sizes)


def check_as_balanced_as_possible(
    subscriptions: Mapping[str, Subscription], assignments: Mapping[str, Assignment]
) -> None:
    """No chain of moves -- a member hands a partition to another subscriber of
    its topic, who hands one on, and so on -- ends at a member with at least two
    partitions fewer than where it starts. Such a chain is exactly what an
    assignment that could be more even has (and one that has none has the
    smallest possible maximum and largest possible minimum)."""
    load = counts(assignments)
    subscribers: dict[str, list[str]] = {}
    for member_id, subscription in subscriptions.items():
        for topic in set(subscription.topics):
            subscribers.setdefault(topic, []).append(member_id)
    held_topics = {m: {t for t, _ in a.partitions} for m, a in assignments.items()}
    for start in subscriptions:
        seen = {start}
        queue = deque([start])
        while queue:
            member_id = queue.popleft()
            for topic in held_topics[member_id]:
                for other in subscribers[topic]:
                    if other not in seen:
                        seen.add(other)
                        queue.append(other)
        better = [m for m in seen if load[m] <= load[start] - 2]
        assert not better, f"{start} ({load[start]}) could pass partitions on to {better}"


def moved(before: Mapping[str, Assignment], after: Mapping[str, Assignment]) -> set[TopicPartition]:
    """Partitions that had an owner before and have a different one now."""
    owner_before = {tp: m for m, a in before.items() for tp in a.partitions}
    owner_after = {tp: m for m, a in after.items() for tp in a.partitions}
    return {tp for tp, m in owner_before.items() if tp in owner_after and owner_after[tp] != m}
