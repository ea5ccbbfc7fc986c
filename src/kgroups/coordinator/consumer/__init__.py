"""KIP-848 consumer groups: records, model and heartbeat, sans IO.

``ConsumerGroupCoordinator.heartbeat`` answers ConsumerGroupHeartbeat and
returns the records to append; ``ConsumerGroupTable.replay`` applies a
record (the same path on load); ``records`` encodes and decodes them as
Kafka 4.x does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgroups.coordinator.consumer.config import ConsumerGroupConfig
    from kgroups.coordinator.consumer.coordinator import ConsumerGroupCoordinator
    from kgroups.coordinator.consumer.group import ConsumerGroup, ConsumerGroupState
    from kgroups.coordinator.consumer.heartbeat_messages import (
        HeartbeatAnswer,
        HeartbeatError,
        HeartbeatRequest,
    )
    from kgroups.coordinator.consumer.member import (
        LEAVE_GROUP_MEMBER_EPOCH,
        LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        ConsumerGroupMember,
        MemberState,
    )
    from kgroups.coordinator.consumer.table import ConsumerGroupTable
    from kgroups.coordinator.consumer.timer_keys import ConsumerTimerKey
    from kgroups.coordinator.consumer.topics import TopicImage, TopicsView
    from kgroups.topics.names import TopicInfo

# Each name is imported on first use: the broker imports a module of this
# package at start and needs the rest only with the first group request.
_HOMES = {
    "ConsumerGroupConfig": "kgroups.coordinator.consumer.config",
    "ConsumerGroupCoordinator": "kgroups.coordinator.consumer.coordinator",
    "ConsumerGroup": "kgroups.coordinator.consumer.group",
    "ConsumerGroupState": "kgroups.coordinator.consumer.group",
    "HeartbeatAnswer": "kgroups.coordinator.consumer.heartbeat_messages",
    "HeartbeatError": "kgroups.coordinator.consumer.heartbeat_messages",
    "HeartbeatRequest": "kgroups.coordinator.consumer.heartbeat_messages",
    "LEAVE_GROUP_MEMBER_EPOCH": "kgroups.coordinator.consumer.member",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH": "kgroups.coordinator.consumer.member",
    "ConsumerGroupMember": "kgroups.coordinator.consumer.member",
    "MemberState": "kgroups.coordinator.consumer.member",
    "ConsumerGroupTable": "kgroups.coordinator.consumer.table",
    "ConsumerTimerKey": "kgroups.coordinator.consumer.timer_keys",
    "TopicImage": "kgroups.coordinator.consumer.topics",
    "TopicsView": "kgroups.coordinator.consumer.topics",
    "TopicInfo": "kgroups.topics.names",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ConsumerGroup",
    "ConsumerGroupConfig",
    "ConsumerGroupCoordinator",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "ConsumerGroupTable",
    "ConsumerTimerKey",
    "HeartbeatAnswer",
    "HeartbeatError",
    "HeartbeatRequest",
    "MemberState",
    "TopicImage",
    "TopicInfo",
    "TopicsView",
]
