"""A consumer group coordinator on virtual time, with its record log."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kgroups.coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupTable,
    HeartbeatAnswer,
    HeartbeatRequest,
    TopicImage,
)
from kgroups.coordinator.consumer.group import ConsumerGroup

FOO = uuid.UUID(int=1)
BAR = uuid.UUID(int=2)
ALL_FOO_TOPICS = {FOO: [0, 1, 2, 3, 4, 5]}


class Harness:
    def __init__(self, **config: Any) -> None:
        self.topics = TopicImage()
        self.topics.put("foo", 6, FOO)
        self.topics.put("bar", 3, BAR)
        self.now = 0
        ids = itertools.count(1)
        self.coordinator = ConsumerGroupCoordinator(
            ConsumerGroupConfig(**config), new_member_id=lambda: f"generated-{next(ids)}"
        )
        self.log: list[tuple[bytes, bytes | None]] = []

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> HeartbeatAnswer:
        records, answer = self.coordinator.heartbeat(
            HeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields),
            self.topics,
            self.now,
        )
        self.log.extend(records)
        return answer

    def join(
        self, member_id: str, topics: Sequence[str] = ("foo",), **fields: Any
    ) -> HeartbeatAnswer:
        fields.setdefault("rebalance_timeout_ms", 60_000)
        return self.heartbeat(
            member_id, 0, subscribed_topic_names=list(topics), owned_partitions=[], **fields
        )

    def owning(
        self, member_id: str, epoch: int, owned: Mapping[uuid.UUID, Sequence[int]]
    ) -> HeartbeatAnswer:
        return self.heartbeat(member_id, epoch, owned_partitions=list(owned.items()))

    def advance(self, ms: int) -> None:
        self.now += ms
        self.log.extend(self.coordinator.expire(self.now, self.topics))

    @property
    def group(self) -> ConsumerGroup:
        group = self.coordinator.table.get("g")
        assert group is not None
        return group

    def replayed(self) -> ConsumerGroupTable:
        table = ConsumerGroupTable()
        for key, value in self.log:
            table.replay_bytes(key, value)
        return table


def snapshot(group: ConsumerGroup) -> dict[str, Any]:
    """Everything about a group a client or a describe could observe."""
    return {
        "state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "metadata_hash": group.metadata_hash,
        "members": {
            m.member_id: (
                m.instance_id,
                m.subscribed_topic_names,
                m.member_epoch,
                m.previous_member_epoch,
                m.state,
                plain(m.assigned_partitions),
                plain(m.partitions_pending_revocation),
            )
            for m in group.members.values()
        },
        "target": {k: plain(v) for k, v in group.target_assignment.items()},
        "partition_epochs": group.partition_epochs,
        "static_members": group.static_members,
    }


def plain(assignment: Mapping[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, set[int]]:
    return {t: set(p) for t, p in assignment.items()}


def partitions(answer: HeartbeatAnswer) -> dict[uuid.UUID, set[int]] | None:
    return None if answer.assignment is None else plain(answer.assignment)
