"""What the consumer subscribes to, what it was assigned, and where it stands in each
partition (the Java client's SubscriptionState).

A consumer either subscribes -- to topics, or to a pattern matched against the
cluster's topics -- and lets the group assign partitions, or assigns partitions
to itself; the two are exclusive. Each assigned partition moves through:

    INITIALIZING  no position yet: look up the group's committed offset
    AWAIT_RESET   no usable offset: ask the leader (ListOffsets) for the earliest
                  or latest one, per the reset strategy
    FETCHING      a position: fetch from it, unless paused

``position`` is the next offset handed to the user, so committing "all consumed"
stores exactly what poll() has returned so far. Every seek gives the partition a
new ``epoch`` (unique across the consumer's life, so a partition revoked and
assigned again never reuses one), which lets the fetcher drop data it fetched
for an older position.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition

__all__ = ["EARLIEST", "LATEST", "NONE", "PartitionState", "SubscriptionState", "SubscriptionType"]

EARLIEST = "earliest"
LATEST = "latest"
NONE = "none"

_epochs = itertools.count(1)


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "topics"
    AUTO_PATTERN = "pattern"
    AUTO_REGEX = "regex"
    """A regular expression the group coordinator evaluates (group.protocol=consumer)."""
    USER_ASSIGNED = "assigned"


class SubscriptionConflict(RuntimeError):
    def __init__(self) -> None:
        super().__init__(
            "subscribing to topics, to a pattern and assigning partitions exclude each other"
        )


@dataclass(slots=True)
class PartitionState:
    position: int | None = None
    reset_strategy: str | None = None
    paused: bool = False
    pending_revocation: bool = False
    """About to be given up: its offset is being committed, so nothing more of
    it may reach the user (else that would be read again by the next owner)."""
    epoch: int = field(default_factory=lambda: next(_epochs))
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1


class SubscriptionState:
    def __init__(self, default_reset_strategy: str = LATEST) -> None:
        self.default_reset_strategy = default_reset_strategy
        self.type = SubscriptionType.NONE
        self.subscription: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        self.regex: str | None = None
        self.group_subscription: frozenset[str] = frozenset()
        self.listener: Any = None
        self._assignment: dict[TopicPartition, PartitionState] = {}
        self.assignment_version = 0
        """Bumped whenever the set of assigned partitions changes."""

    # -- subscribing ---------------------------------------------------------

    def _set_type(self, kind: SubscriptionType) -> None:
        if self.type is SubscriptionType.NONE:
            self.type = kind
        elif self.type is not kind:
            raise SubscriptionConflict()

    def subscribe(self, topics: Iterable[str], listener: Any = None) -> bool:
        """Returns whether the topic set changed."""
        self._set_type(SubscriptionType.AUTO_TOPICS)
        self.listener = listener
        return self._change_subscription(frozenset(topics))

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: Any = None) -> None:
        self._set_type(SubscriptionType.AUTO_PATTERN)
        self.listener = listener
        self.pattern = pattern

    def subscribe_regex(self, regex: str, listener: Any = None) -> bool:
        """Returns whether the regex changed."""
        self._set_type(SubscriptionType.AUTO_REGEX)
        self.listener = listener
        changed = regex != self.regex
        self.regex = regex
        return changed

    def subscribe_from_pattern(self, topics: Iterable[str]) -> bool:
        """The topics of the cluster that match the pattern now; True when they changed."""
        if self.type is not SubscriptionType.AUTO_PATTERN:
            raise RuntimeError("not subscribed to a pattern")
        return self._change_subscription(frozenset(topics))

    def matches_subscribed_pattern(self, topic: str) -> bool:
        return self.pattern is not None and self.pattern.fullmatch(topic) is not None

    def _change_subscription(self, topics: frozenset[str]) -> bool:
        if topics == self.subscription:
            return False
        self.subscription = topics
        return True

    def group_subscribe(self, topics: Iterable[str]) -> bool:
        """The leader watches every topic of the group, to notice partition changes."""
        if not self.partitions_auto_assigned():
            raise SubscriptionConflict()
        union = self.subscription | frozenset(topics)
        changed = union != self.group_subscription
        self.group_subscription = union
        return changed

    def reset_group_subscription(self) -> None:
        self.group_subscription = frozenset()

    def unsubscribe(self) -> None:
        self.subscription = frozenset()
        self.group_subscription = frozenset()
        self.pattern = None
        self.regex = None
        self.type = SubscriptionType.NONE
        self._replace_assignment(())

    def partitions_auto_assigned(self) -> bool:
        return self.type in (
            SubscriptionType.AUTO_TOPICS,
            SubscriptionType.AUTO_PATTERN,
            SubscriptionType.AUTO_REGEX,
        )

    def has_pattern_subscription(self) -> bool:
        return self.type is SubscriptionType.AUTO_PATTERN

    def metadata_topics(self) -> set[str]:
        """The topics whose metadata the consumer needs."""
        if self.type is SubscriptionType.USER_ASSIGNED:
            return {tp.topic for tp in self._assignment}
        if self.type is SubscriptionType.AUTO_REGEX:
            # The coordinator matches the topics; those assigned need metadata.
            return {tp.topic for tp in self._assignment}
        return set(self.subscription | self.group_subscription)

    # -- assignment ----------------------------------------------------------

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> bool:
        self._set_type(SubscriptionType.USER_ASSIGNED)
        wanted = [TopicPartition(*tp) for tp in partitions]
        if set(wanted) == set(self._assignment):
            return False
        self._replace_assignment(wanted)
        return True

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition]) -> None:
        """The group's assignment; partitions kept from before keep their state."""
        if not self.partitions_auto_assigned():
            raise SubscriptionConflict()
        self._replace_assignment(partitions)

    def assignment_matches_subscription(self, partitions: Iterable[TopicPartition]) -> bool:
        for tp in partitions:
            if self.type is SubscriptionType.AUTO_PATTERN:
                if not self.matches_subscribed_pattern(tp.topic):
                    return False
            elif tp.topic not in self.subscription:
                return False
        return True

    def _replace_assignment(self, partitions: Iterable[TopicPartition]) -> None:
        old = self._assignment
        new = {tp: old.get(tp) or PartitionState() for tp in sorted(partitions)}
        if new.keys() != old.keys():
            self.assignment_version += 1
        self._assignment = new

    def assigned_partitions(self) -> set[TopicPartition]:
        return set(self._assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._assignment

    def state_or_none(self, tp: TopicPartition) -> PartitionState | None:
        return self._assignment.get(tp)

    def state(self, tp: TopicPartition) -> PartitionState:
        state = self._assignment.get(tp)
        if state is None:
            raise KeyError(f"partition {tp.topic}-{tp.partition} is not assigned to this consumer")
        return state

    # -- positions -----------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self.state(tp)
        state.position = offset
        state.reset_strategy = None
        state.epoch = next(_epochs)

    def advance(self, tp: TopicPartition, position: int) -> None:
        """Records up to ``position`` were handed to the user (no epoch change:
        data fetched beyond them stays valid)."""
        self.state(tp).position = position

    def position(self, tp: TopicPartition) -> int | None:
        return self.state(tp).position

    def request_reset(
        self, partitions: Iterable[TopicPartition], strategy: str | None = None
    ) -> None:
        for tp in partitions:
            state = self.state(tp)
            state.reset_strategy = strategy or self.default_reset_strategy
            state.position = None
            state.epoch = next(_epochs)

    def initializing_partitions(self) -> list[TopicPartition]:
        """Assigned partitions that need their committed offset looked up."""
        return [
            tp
            for tp, s in self._assignment.items()
            if s.position is None and s.reset_strategy is None
        ]

    def partitions_awaiting_reset(self) -> dict[TopicPartition, str]:
        return {
            tp: s.reset_strategy
            for tp, s in self._assignment.items()
            if s.reset_strategy is not None
        }

    def has_all_fetch_positions(self) -> bool:
        return all(s.position is not None for s in self._assignment.values())

    def is_fetchable(self, tp: TopicPartition) -> bool:
        state = self._assignment.get(tp)
        return state is not None and _fetchable(state)

    def fetchable_partitions(self) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if _fetchable(s)]

    def mark_pending_revocation(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            state = self._assignment.get(tp)
            if state is not None:
                state.pending_revocation = True

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The position of every partition that has one: what auto-commit stores."""
        return {
            tp: OffsetAndMetadata(s.position)
            for tp, s in self._assignment.items()
            if s.position is not None
        }

    # -- pausing -------------------------------------------------------------

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = True

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self.state(tp).paused = False

    def paused_partitions(self) -> set[TopicPartition]:
        return {tp for tp, s in self._assignment.items() if s.paused}


def _fetchable(state: PartitionState) -> bool:
    return not state.paused and not state.pending_revocation and state.position is not None
