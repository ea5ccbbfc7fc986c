"""Members grouped by what they subscribe to, and topic ids numbered.

Large groups have few distinct subscriptions, so the assignors work per
subscription class and per topic number rather than per member and topic id:
a uuid.UUID hashes in Python code, which would dominate a loop over 100,000
partitions. Members usually share one subscription object (the coordinator
resolves equal topic name lists once); those are grouped by identity at the
cost of an int lookup, equal but distinct sets by value.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from kgroups.coordinator.consumer_assignors.ordering import topics_in_order
from kgroups.coordinator.consumer_assignors.spec import MemberSpec

__all__ = ["SubscriptionClasses", "TopicNumbers"]


class TopicNumbers:
    """Topic ids numbered 0..n-1 in Kafka's topic id order."""

    __slots__ = ("_by_identity", "_by_value", "ids")

    def __init__(self, topic_ids: Iterable[uuid.UUID]) -> None:
        self.ids = topics_in_order(topic_ids)
        self._by_value = {t: n for n, t in enumerate(self.ids)}
        # The ids stay alive in self.ids, so no other object can take their id().
        self._by_identity = {id(t): n for n, t in enumerate(self.ids)}

    def get(self, topic_id: uuid.UUID) -> int | None:
        number = self._by_identity.get(id(topic_id))
        return number if number is not None else self._by_value.get(topic_id)

    def number(self, topic_id: uuid.UUID) -> int:
        """The number of a topic known to be numbered."""
        number = self._by_identity.get(id(topic_id))
        return number if number is not None else self._by_value[topic_id]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(slots=True)
class SubscriptionClasses:
    member_class: list[int]
    """Per member (in the order given), its class."""
    members: list[list[int]]
    """Per class, its members, ascending."""
    topics: list[list[int]]
    """Per class, the topic numbers it subscribes to, ascending."""
    numbers: TopicNumbers
    """Every topic some member subscribes to."""

    @classmethod
    def of(cls, members: Sequence[MemberSpec]) -> SubscriptionClasses:
        by_identity: dict[int, int] = {}
        by_value: dict[frozenset[uuid.UUID], int] = {}
        subscriptions: list[frozenset[uuid.UUID]] = []
        member_class: list[int] = []
        class_members: list[list[int]] = []
        for index, member in enumerate(members):
            subscribed = member.subscribed_topic_ids
            number = by_identity.get(id(subscribed))
            if number is None:
                number = by_value.get(subscribed)
                if number is None:
                    number = by_value[subscribed] = len(subscriptions)
                    subscriptions.append(subscribed)
                    class_members.append([])
                by_identity[id(subscribed)] = number
            member_class.append(number)
            class_members[number].append(index)
        numbers = TopicNumbers(set().union(*subscriptions))
        number_of = numbers.number
        topics = [sorted(map(number_of, s)) for s in subscriptions]
        return cls(member_class, class_members, topics, numbers)

    def subscribers(self) -> list[list[int]]:
        """Per topic number, its subscribers, ascending. Topics read by one
        class share that class's list."""
        classes: list[list[int]] = [[] for _ in range(len(self.numbers))]
        for number, topics in enumerate(self.topics):
            for topic in topics:
                classes[topic].append(number)
        merged: dict[tuple[int, ...], list[int]] = {}
        result = []
        for readers in classes:
            key = tuple(readers)
            members = merged.get(key)
            if members is None:
                if len(readers) == 1:
                    members = self.members[readers[0]]
                else:
                    members = sorted(chain.from_iterable(self.members[c] for c in readers))
                merged[key] = members
            result.append(members)
        return result
