"""A consumer group member: its subscription and where its reconciliation stands."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kgroups.coordinator.consumer.records import ClassicMemberMetadata
from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment

LEAVE_GROUP_MEMBER_EPOCH = -1
"""A member leaving for good sends this epoch; a removed member has it."""
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
"""A static member leaving for now: it keeps its assignment until its session
times out or a member with the same instance id replaces it."""


class MemberState(enum.IntEnum):
    """Kafka's MemberState, with the byte its records store."""

    STABLE = 0
    """The member owns its whole target assignment at the target epoch."""
    UNREVOKED_PARTITIONS = 1
    """The member must give up partitions first; its epoch stays until it
    reports them gone."""
    UNRELEASED_PARTITIONS = 2
    """The member is at the target epoch, but some of its target partitions
    are still owned by other members; it gets them once released."""
    UNKNOWN = 127
    """A state this coordinator does not know (a newer broker wrote it): the
    member is fenced unless it owns nothing."""

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMemberMetadata | None = None
    """Set for a member speaking the classic protocol (JoinGroup, SyncGroup,
    Heartbeat) inside the consumer group."""
    # From the current member assignment record.
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=lambda: EMPTY_ASSIGNMENT)
    partitions_pending_revocation: Assignment = field(default_factory=lambda: EMPTY_ASSIGNMENT)

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch
