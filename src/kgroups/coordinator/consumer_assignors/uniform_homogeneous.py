"""The uniform assignor when every member subscribes to the same topics.

As Kafka's UniformHomogeneousAssignmentBuilder: with N partitions and M
members, every member's quota is N // M, and N % M of them may hold one more.
Members keep what they hold up to their quota; what is left over -- new
partitions, those of members that left, and those over a quota -- is dealt
to the members under their quota. Balance first, then stickiness.

Two choices make it deterministic and a little stickier than Kafka's (which
follows hash-map order): the extra places go first to members already
holding more than N // M, then to the others in member id order; a member
over its quota keeps its lowest partitions, topics in topic id order.

Partitions are dealt as slices of per-topic runs, so the cost is per member
and per topic, not per partition; members whose assignment does not change
get their input mapping back untouched.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from kgroups.coordinator.consumer_assignors.current_assignment import keep_valid_partitions
from kgroups.coordinator.consumer_assignors.spec import (
    EMPTY_ASSIGNMENT,
    Assignment,
    AssignorError,
    GroupAssignment,
    MemberSpec,
    TopicMetadata,
    partition_count,
)
from kgroups.coordinator.consumer_assignors.subscription_classes import TopicNumbers

__all__ = ["assign_homogeneous"]


def assign_homogeneous(
    members: Sequence[MemberSpec], topics: Mapping[uuid.UUID, TopicMetadata]
) -> GroupAssignment:
    """``members`` in member id order, all with the same subscription."""
    if not members:
        return {}
    numbers = TopicNumbers(members[0].subscribed_topic_ids)
    subscribed = numbers.ids
    counts = [partition_count(topics, t) for t in subscribed]
    total = sum(counts)
    if total == 0:
        return {m.member_id: EMPTY_ASSIGNMENT for m in members}
    kept = keep_valid_partitions(members, numbers, counts)
    assignments, sizes = kept.assignments, kept.sizes
    quotas = _quotas(total, sizes)

    revoked: dict[uuid.UUID, list[int]] = {}
    for index, quota in enumerate(quotas):
        if sizes[index] > quota:
            assignments[index] = _trim(assignments[index], quota, subscribed, revoked)
            sizes[index] = quota

    runs = _unassigned_runs(subscribed, counts, kept.claimed, revoked)
    _deal(runs, assignments, sizes, quotas)
    return {member.member_id: assignments[i] for i, member in enumerate(members)}


def _quotas(total: int, sizes: list[int]) -> list[int]:
    minimum, extra = divmod(total, len(sizes))
    quotas = [minimum] * len(sizes)
    if extra:
        # Extra places to those that would otherwise give a partition up.
        for index, size in enumerate(sizes):
            if size > minimum:
                quotas[index] += 1
                extra -= 1
                if not extra:
                    break
        index = 0
        while extra:
            if quotas[index] == minimum:
                quotas[index] += 1
                extra -= 1
            index += 1
    return quotas


def _trim(
    assignment: Assignment,
    quota: int,
    subscribed: list[uuid.UUID],
    revoked: dict[uuid.UUID, list[int]],
) -> Assignment:
    """The member's lowest ``quota`` partitions; the rest go to ``revoked``."""
    kept: dict[uuid.UUID, frozenset[int]] = {}
    room = quota
    for topic_id in subscribed:
        partitions = assignment.get(topic_id)
        if partitions is None:
            continue
        if len(partitions) <= room:
            if partitions:
                kept[topic_id] = partitions
            room -= len(partitions)
            continue
        ordered = sorted(partitions)
        if room:
            kept[topic_id] = frozenset(ordered[:room])
        revoked.setdefault(topic_id, []).extend(ordered[room:])
        room = 0
    return kept


def _unassigned_runs(
    subscribed: list[uuid.UUID],
    counts: list[int],
    claimed: list[set[int]],
    revoked: Mapping[uuid.UUID, list[int]],
) -> list[tuple[uuid.UUID, Sequence[int]]]:
    """Per topic in topic order, the partitions nobody keeps, ascending."""
    runs: list[tuple[uuid.UUID, Sequence[int]]] = []
    for topic, topic_id in enumerate(subscribed):
        count = counts[topic]
        held = claimed[topic]
        given_up = revoked.get(topic_id)
        if not held:
            if count:
                runs.append((topic_id, range(count)))
            continue
        if len(held) == count and not given_up:
            continue
        free = set(range(count)).difference(held)
        if given_up:
            free.update(given_up)
        if free:
            runs.append((topic_id, sorted(free)))
    return runs


def _deal(
    runs: list[tuple[uuid.UUID, Sequence[int]]],
    assignments: list[Assignment],
    sizes: list[int],
    quotas: list[int],
) -> None:
    """Fill each member under its quota, in member order, with the next
    partitions of the runs."""
    needs = [quota - size for quota, size in zip(quotas, sizes, strict=True)]
    if sum(needs) != sum(len(partitions) for _, partitions in runs):
        raise AssignorError("the partitions to deal do not match the members' room")
    if not runs:
        return
    run = 0
    topic_id, partitions = runs[0]
    start = 0
    for index, need in enumerate(needs):
        if need <= 0:
            continue
        if not assignments[index] and start + need < len(partitions):
            # The common case of a fresh group: one slice of the current run.
            assignments[index] = {topic_id: frozenset(partitions[start : start + need])}
            start += need
            continue
        assignment = dict(assignments[index])
        while need:
            taken = partitions[start : start + need]
            held = assignment.get(topic_id)
            assignment[topic_id] = frozenset(taken) if held is None else held.union(taken)
            start += len(taken)
            need -= len(taken)
            if start == len(partitions) and run + 1 < len(runs):
                run += 1
                topic_id, partitions = runs[run]
                start = 0
        assignments[index] = assignment
