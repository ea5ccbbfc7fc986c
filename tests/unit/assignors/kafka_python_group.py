"""Runs kafka-python's assignors on the same input as ours, for comparison."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from kgroups.assignors import Assignment, Subscription, TopicPartition


class KafkaPythonCluster:
    """The two questions kafka-python's assignors ask of cluster metadata."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._partitions = {t: set(range(n)) for t, n in partitions_per_topic.items() if n > 0}

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._partitions.get(topic)


@dataclass
class KafkaPythonMember:
    member_id: str
    group_instance_id: str | None
    metadata: Any


def kafka_python_assign(
    assignor: Any,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> dict[str, Assignment]:
    members = [
        KafkaPythonMember(
            member_id,
            s.group_instance_id,
            ConsumerProtocolSubscription(
                version=0, topics=list(s.topics), user_data=s.user_data or b""
            ),
        )
        for member_id, s in subscriptions.items()
    ]
    result = assignor.assign(KafkaPythonCluster(partitions_per_topic), members)
    return {
        member_id: Assignment([TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps])
        for member_id, a in result.items()
    }
