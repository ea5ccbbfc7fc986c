"""A consumer group's target assignment for its group epoch, computed by the
server-side assignor the members prefer: the records that store it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.records import (
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    GroupKey,
    MemberKey,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
)
from kgroups.coordinator.consumer.topics import TopicsView
from kgroups.coordinator.consumer_assignors import (
    ConsumerGroupAssignor,
    GroupSpec,
    MemberSpec,
    TopicMetadata,
    assignor,
)

Change = (
    tuple[MemberKey, TargetAssignmentMemberValue] | tuple[GroupKey, TargetAssignmentMetadataValue]
)


def target_assignment(
    group: ConsumerGroup, topics: TopicsView, offered: Mapping[str, ConsumerGroupAssignor]
) -> list[Change]:
    """The members' changed targets, then the assignment epoch, in the order to write them."""
    topic_metadata: dict[uuid.UUID, TopicMetadata] = {}
    topic_ids: dict[str, uuid.UUID] = {}
    for name in group.subscribed_topic_names():
        info = topics.lookup(name)
        if info is not None and info.partitions > 0:
            topic_ids[name] = info.topic_id
            topic_metadata[info.topic_id] = TopicMetadata(info.partitions)
    subscriptions: dict[tuple[tuple[str, ...], str | None], frozenset[uuid.UUID]] = {}
    specs = []
    for member in group.members.values():
        subscription = (member.subscribed_topic_names, member.subscribed_topic_regex)
        ids = subscriptions.get(subscription)
        if ids is None:  # members mostly share subscriptions: resolve each once
            ids = subscriptions[subscription] = frozenset(
                topic_ids[n] for n in group.member_topics(member) if n in topic_ids
            )
        specs.append(
            MemberSpec(
                member_id=member.member_id,
                subscribed_topic_ids=ids,
                assignment=group.target_of(member.member_id),
                instance_id=member.instance_id,
                rack_id=member.rack_id,
            )
        )
    chosen = assignor(group.preferred_assignor(), offered)
    result = chosen.assign(GroupSpec(specs), topic_metadata)
    group_id = group.group_id
    changes: list[Change] = []
    for member_id, new in result.items():
        old = group.target_assignment.get(member_id)
        if old is None or (new is not old and new != old):
            changes.append(
                (
                    MemberKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                    TargetAssignmentMemberValue(new),
                )
            )
    changes.append(
        (
            GroupKey(TARGET_ASSIGNMENT_METADATA, group_id),
            TargetAssignmentMetadataValue(group.group_epoch),
        )
    )
    return changes
