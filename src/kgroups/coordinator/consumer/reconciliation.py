"""One reconciliation step of a member towards its target assignment.

The order is what keeps a partition from being consumed twice: a member
first gives up what its target no longer holds (its epoch does not move
until it reports those partitions gone), then moves to the target epoch and
receives its new partitions, each only once no other member owns it (its
partition epoch is -1). Partitions still owned elsewhere are withheld: the
member waits in UNRELEASED_PARTITIONS and picks them up on a later heartbeat.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgroups.coordinator.consumer.member import ConsumerGroupMember, MemberState
from kgroups.coordinator.consumer.records import assignment_of
from kgroups.coordinator.consumer_assignors.spec import Assignment

OwnedPartitions = Sequence[tuple[uuid.UUID, Sequence[int]]]
"""What a heartbeat reports the member owns (None: not reported)."""

PartitionEpoch = Callable[[uuid.UUID, int], int]
"""The epoch of the member owning a partition, -1 when nobody does."""


class FencedMemberEpoch(Exception):
    """The member must give up all its partitions and rejoin with epoch 0."""


@dataclass(frozen=True, slots=True)
class Reconciled:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment

    def differs_from(self, member: ConsumerGroupMember) -> bool:
        return (
            self.member_epoch != member.member_epoch
            or self.previous_member_epoch != member.previous_member_epoch
            or self.state is not member.state
            or self.assigned_partitions != member.assigned_partitions
            or self.partitions_pending_revocation != member.partitions_pending_revocation
        )


def _owns_any(owned: OwnedPartitions | None, partitions: Assignment) -> bool:
    if owned is None:  # not reported: assume it still owns them
        return True
    for topic_id, owned_partitions in owned:
        pending = partitions.get(topic_id)
        if pending and any(p in pending for p in owned_partitions):
            return True
    return False


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: OwnedPartitions | None,
) -> Reconciled:
    """The member's next state. Raises FencedMemberEpoch for a member in an
    unknown state that still owns partitions."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return _unchanged(member)
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return _unchanged(member)
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise FencedMemberEpoch("the member is in an unknown state")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _unchanged(member: ConsumerGroupMember) -> Reconciled:
    return Reconciled(
        member.member_epoch,
        member.previous_member_epoch,
        member.state,
        member.assigned_partitions,
        member.partitions_pending_revocation,
    )


def _next(
    member: ConsumerGroupMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: OwnedPartitions | None,
) -> Reconciled:
    current = member.assigned_partitions
    kept: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    receive: dict[uuid.UUID, frozenset[int]] = {}
    unreleased = False
    for topic_id in target.keys() | current.keys():
        wanted = target.get(topic_id, frozenset())
        have = current.get(topic_id, frozenset())
        kept[topic_id] = have & wanted
        revoke[topic_id] = have - wanted
        new = wanted - have
        free = frozenset(p for p in new if partition_epoch(topic_id, p) == -1)
        if len(free) != len(new):
            unreleased = True
        receive[topic_id] = free
    kept_assignment = assignment_of(kept)
    revoked = assignment_of(revoke)
    received = assignment_of(receive)
    if revoked and _owns_any(owned, revoked):
        # Keep the epoch until the member reports the revoked partitions gone.
        return Reconciled(
            epoch,
            member.member_epoch,
            MemberState.UNREVOKED_PARTITIONS,
            kept_assignment,
            revoked,
        )
    assigned = kept_assignment
    if received:
        merged = dict(kept_assignment)
        for topic_id, partitions in received.items():
            merged[topic_id] = merged.get(topic_id, frozenset()) | partitions
        assigned = assignment_of(merged)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(target_epoch, member.member_epoch, state, assigned, assignment_of({}))
