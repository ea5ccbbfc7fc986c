"""The records a consumer group writes when members go: one fenced (its
session or rebalance timeout ran out, it left, or a test made it so), one
replaced by a static member rejoining under a new member id, and the whole
group once empty and deleted. Each record is applied as it is written."""

from __future__ import annotations

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.member import ConsumerGroupMember
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    PARTITION_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    CurrentMemberAssignmentValue,
    Emit,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    RegularExpressionKey,
    TargetAssignmentMemberValue,
)
from kgroups.coordinator.consumer.regex_refresh import drop_unused_regex
from kgroups.coordinator.consumer.table import ConsumerGroupTable
from kgroups.coordinator.consumer.timer_keys import (
    CLASSIC_JOIN,
    REBALANCE,
    SESSION,
    ConsumerTimerKey,
)
from kgroups.coordinator.consumer.topics import TopicsView, metadata_hash
from kgroups.coordinator.timers import TimerQueue

Timers = TimerQueue[ConsumerTimerKey, int]


def fence_member(
    group: ConsumerGroup, member_id: str, topics: TopicsView, emit: Emit, timers: Timers
) -> None:
    """Remove the member; the group epoch moves on so that the others get
    its partitions."""
    regex = group.members[member_id].subscribed_topic_regex
    remove_member(group.group_id, member_id, emit, timers)
    if regex:
        drop_unused_regex(group, regex, emit)
    # The remaining subscriptions may cover fewer topics.
    group.topics_version_seen = topics.version
    next_group_epoch(group, topics, emit)


def next_group_epoch(group: ConsumerGroup, topics: TopicsView, emit: Emit) -> None:
    """The group epoch moves on, with the hash of the subscribed topics."""
    emit(
        GroupKey(GROUP_METADATA, group.group_id),
        GroupMetadataValue(
            group.group_epoch + 1, metadata_hash(group.subscribed_topic_names(), topics)
        ),
    )


def replace_member(
    table: ConsumerGroupTable,
    group: ConsumerGroup,
    old: ConsumerGroupMember,
    member_id: str,
    emit: Emit,
    timers: Timers,
) -> None:
    """A static member rejoining under ``member_id`` takes over the old
    one's metadata and assignment, at epoch 0."""
    group_id = group.group_id
    target = group.target_of(old.member_id)
    metadata = table.current(MemberKey(MEMBER_METADATA, group_id, old.member_id))
    remove_member(group_id, old.member_id, emit, timers)
    emit(MemberKey(MEMBER_METADATA, group_id, member_id), metadata)
    emit(
        MemberKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
        TargetAssignmentMemberValue(target),
    )
    emit(
        MemberKey(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
        CurrentMemberAssignmentValue(
            0, 0, old.state, old.assigned_partitions, old.partitions_pending_revocation
        ),
    )


def remove_member(group_id: str, member_id: str, emit: Emit, timers: Timers) -> None:
    """The member's three records tombstoned, its timers cancelled."""
    emit(MemberKey(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None)
    emit(MemberKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None)
    emit(MemberKey(MEMBER_METADATA, group_id, member_id), None)
    timers.cancel(ConsumerTimerKey(SESSION, group_id, member_id))
    timers.cancel(ConsumerTimerKey(REBALANCE, group_id, member_id))
    timers.cancel(ConsumerTimerKey(CLASSIC_JOIN, group_id, member_id))


def delete_empty_group(group: ConsumerGroup, emit: Emit) -> None:
    """The tombstones of every record of a group without members."""
    group_id = group.group_id
    for member_id in list(group.target_assignment):
        emit(MemberKey(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None)
    for regex in list(group.regexes):
        emit(RegularExpressionKey(group_id, regex), None)
    emit(GroupKey(TARGET_ASSIGNMENT_METADATA, group_id), None)
    emit(GroupKey(PARTITION_METADATA, group_id), None)
    emit(GroupKey(GROUP_METADATA, group_id), None)
