"""One reconciliation step of a member, written: the step reconciliation.py
computes becomes the member's current-assignment record, and its rebalance
timeout runs while it has partitions to revoke."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.heartbeat_messages import HeartbeatError
from kgroups.coordinator.consumer.member import ConsumerGroupMember, MemberState
from kgroups.coordinator.consumer.reconciliation import (
    FencedMemberEpoch,
    OwnedPartitions,
    reconcile,
)
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    CurrentMemberAssignmentValue,
    Emit,
    MemberKey,
)
from kgroups.coordinator.consumer.timer_keys import REBALANCE, ConsumerTimerKey
from kgroups.coordinator.timers import TimerQueue


def reconcile_member(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    owned: OwnedPartitions | None,
    now_ms: int,
    emit: Emit,
    timers: TimerQueue[ConsumerTimerKey, int],
) -> None:
    """One step of ``member`` towards its target; a member whose epoch is
    fenced raises HeartbeatError before anything is written."""
    try:
        step = reconcile(
            member,
            group.assignment_epoch,
            group.target_of(member.member_id),
            group.partition_epoch,
            owned,
        )
    except FencedMemberEpoch as e:
        raise HeartbeatError(ErrorCode.fenced_member_epoch, str(e)) from None
    if not step.differs_from(member):
        return
    emit(
        MemberKey(CURRENT_MEMBER_ASSIGNMENT, group.group_id, member.member_id),
        CurrentMemberAssignmentValue(
            step.member_epoch,
            step.previous_member_epoch,
            int(step.state),
            step.assigned_partitions,
            step.partitions_pending_revocation,
        ),
    )
    key = ConsumerTimerKey(REBALANCE, group.group_id, member.member_id)
    if step.state is MemberState.UNREVOKED_PARTITIONS:
        timers.schedule(key, now_ms + member.rebalance_timeout_ms, step.member_epoch)
    else:
        timers.cancel(key)
