"""A share group's state, changed only by replaying its records.

Theory of operation
-------------------
Like a consumer group (KIP-848), a share group has a *group epoch* that moves
on when a member joins, leaves or changes its subscription, or the
subscribed topics change, and an *assignment epoch*: the group epoch its
target assignment was computed for. Unlike a consumer group, nothing needs
revoking before it is handed on (a partition may have several members at
once, and its records are shared by acquisition locks), so a member takes
its target at its next heartbeat: its member epoch jumps to the assignment
epoch.

::

    EMPTY ──first member──▶ STABLE ──last member gone──▶ EMPTY
                                       DEAD: deleted (the table drops it)

The state is derived from the members, never stored.
"""

from __future__ import annotations

import enum

from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment

NO_ASSIGNMENT_EPOCH = -1
LEAVE_GROUP_MEMBER_EPOCH = -1
STABLE_MEMBER_STATE = 0  # Kafka's MemberState.STABLE byte


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class ShareGroupMember:
    __slots__ = (
        "assigned_partitions",
        "client_host",
        "client_id",
        "member_epoch",
        "member_id",
        "previous_member_epoch",
        "rack_id",
        "subscribed_topic_names",
    )

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.rack_id: str | None = None
        self.client_id = ""
        self.client_host = ""
        self.subscribed_topic_names: tuple[str, ...] = ()
        self.member_epoch = 0
        self.previous_member_epoch = 0
        self.assigned_partitions: Assignment = EMPTY_ASSIGNMENT


class ShareGroup:
    __slots__ = (
        "assignment_epoch",
        "group_epoch",
        "group_id",
        "members",
        "metadata_hash",
        "state_partitions",
        "target_assignment",
        "topics_version_seen",
    )

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = NO_ASSIGNMENT_EPOCH
        self.metadata_hash = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, Assignment] = {}
        # Record 15's value: which partitions' share state is initialized.
        self.state_partitions: bytes | None = None
        # The topics version the metadata hash was last checked against (not stored).
        self.topics_version_seen = -1

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(t for m in self.members.values() for t in m.subscribed_topic_names)
