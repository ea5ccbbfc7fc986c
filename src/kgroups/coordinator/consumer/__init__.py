"""KIP-848 consumer groups: records, model and heartbeat, sans IO.

``ConsumerGroupCoordinator.heartbeat`` answers ConsumerGroupHeartbeat and
returns the records to append; ``ConsumerGroupTable.replay`` applies a
record (the same path on load); ``records`` encodes and decodes them as
Kafka 4.x does.
"""

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
