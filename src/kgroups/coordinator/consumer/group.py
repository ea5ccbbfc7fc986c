"""A consumer group's state, changed only by replaying its records.

Theory of operation
-------------------
Three epochs drive a consumer group (KIP-848):

- the *group epoch* moves on whenever what the assignment depends on
  changes: a member joins, leaves or changes its subscription, or the
  subscribed topics' metadata changes;
- the *assignment epoch* is the group epoch the target assignment was
  computed for; while it lags the group epoch the group is ASSIGNING;
- each member's *member epoch* is the assignment epoch it has reconciled to;
  while some member lags (or still has partitions to revoke or to receive)
  the group is RECONCILING.

``partition_epochs`` says which member epoch owns each partition (a member
owns its assigned partitions and those it has yet to revoke): a partition is
handed to its new owner only once the previous one has released it.

::

    EMPTY ──join──▶ ASSIGNING ──target computed──▶ RECONCILING ──all reconciled──▶ STABLE
      ▲                 ▲                                                            │
      │                 └─────────── join, leave, subscription or topics change ─────┘
      └── last member gone                       DEAD: deleted (the table drops it)

The state is derived from the epochs and members, never stored, so a
restart that replays the records finds the same state.
"""

from __future__ import annotations

import enum
import uuid

from kgroups.coordinator.consumer.member import ConsumerGroupMember, MemberState
from kgroups.coordinator.consumer.records import (
    CurrentMemberAssignmentValue,
    MemberMetadataValue,
)
from kgroups.coordinator.consumer_assignors.spec import EMPTY_ASSIGNMENT, Assignment

NO_ASSIGNMENT_EPOCH = -1


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class ConsumerGroup:
    __slots__ = (
        "_assignors_count",
        "_subscribed_regexes",
        "_subscribed_topics",
        "_unreconciled",
        "assignment_epoch",
        "group_epoch",
        "group_id",
        "members",
        "metadata_hash",
        "partition_epochs",
        "regexes",
        "regexes_refreshed_ms",
        "regexes_version_seen",
        "static_members",
        "target_assignment",
        "topics_version_seen",
    )

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = NO_ASSIGNMENT_EPOCH
        self.metadata_hash = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        """Instance id to member id."""
        self.target_assignment: dict[str, Assignment] = {}
        self.partition_epochs: dict[uuid.UUID, dict[int, int]] = {}
        self.regexes: dict[str, tuple[tuple[str, ...], int, int]] = {}
        """Resolved regular expressions: regex to (topics, version, timestamp)."""
        self.regexes_refreshed_ms: int | None = None
        """The latest resolution's timestamp (None: nothing resolved)."""
        # Not stored: the topic metadata version the regexes were last
        # resolved against (-1 after a load, so they are resolved again).
        self.regexes_version_seen = -1
        # Not stored: the topic metadata version the hash was last checked
        # against (-1 after a load, so the first heartbeat checks it).
        self.topics_version_seen = -1
        # Topic name to the number of members subscribed to it by name, plus
        # the number of resolved regexes matching it.
        self._subscribed_topics: dict[str, int] = {}
        self._subscribed_regexes: dict[str, int] = {}
        self._assignors_count: dict[str, int] = {}
        self._unreconciled: set[str] = set()

    # -- reading -------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if self._unreconciled:
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topic_names(self) -> frozenset[str]:
        """The topics of the members' names and of the resolved regexes."""
        return frozenset(self._subscribed_topics)

    def subscribed_regexes(self) -> dict[str, int]:
        """Regex to the number of members subscribed to it."""
        return self._subscribed_regexes

    def regex_subscribers(self, regex: str) -> int:
        return self._subscribed_regexes.get(regex, 0)

    def has_unresolved_regex(self) -> bool:
        return any(regex not in self.regexes for regex in self._subscribed_regexes)

    def member_topics(self, member: ConsumerGroupMember) -> tuple[str, ...]:
        """The topics a member subscribes to: its names and what its regex resolves to."""
        regex = member.subscribed_topic_regex
        resolved = self.regexes.get(regex) if regex else None
        if resolved is None:
            return member.subscribed_topic_names
        return member.subscribed_topic_names + resolved[0]

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        owners = self.partition_epochs.get(topic_id)
        if owners is None:
            return -1
        return owners.get(partition, -1)

    def target_of(self, member_id: str) -> Assignment:
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)

    def preferred_assignor(self) -> str | None:
        """The server assignor most members ask for (ties: the first name in
        order), None when no member names one."""
        if not self._assignors_count:
            return None
        return min(self._assignors_count.items(), key=lambda kv: (-kv[1], kv[0]))[0]

    def all_members_classic(self) -> bool:
        return all(m.classic is not None for m in self.members.values())

    def is_empty_of_state(self) -> bool:
        return not self.members and not self.target_assignment

    # -- replay --------------------------------------------------------------

    def set_assignment_epoch(self, epoch: int) -> None:
        self.assignment_epoch = epoch
        # Which members are reconciled depends on the epoch: count again.
        self._unreconciled = {
            m.member_id for m in self.members.values() if not m.is_reconciled_to(epoch)
        }

    def apply_member_metadata(self, member_id: str, value: MemberMetadataValue | None) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is None:
                return
            self._forget_subscription(old)
            self._release(old)
            del self.members[member_id]
            self._unreconciled.discard(member_id)
            self._forget_instance(old)
            return
        if old is None:
            member = ConsumerGroupMember(member_id)
            self.members[member_id] = member
            self._track_reconciled(member)
        else:
            member = old
            self._forget_subscription(member)
            self._forget_instance(member)
        member.instance_id = value.instance_id
        member.rack_id = value.rack_id
        member.client_id = value.client_id
        member.client_host = value.client_host
        member.subscribed_topic_names = value.subscribed_topic_names
        member.subscribed_topic_regex = value.subscribed_topic_regex
        member.rebalance_timeout_ms = value.rebalance_timeout_ms
        member.server_assignor = value.server_assignor
        member.classic = value.classic_member_metadata
        for name in member.subscribed_topic_names:
            self._subscribed_topics[name] = self._subscribed_topics.get(name, 0) + 1
        if member.subscribed_topic_regex:
            regex = member.subscribed_topic_regex
            self._subscribed_regexes[regex] = self._subscribed_regexes.get(regex, 0) + 1
        if member.server_assignor:
            count = self._assignors_count.get(member.server_assignor, 0)
            self._assignors_count[member.server_assignor] = count + 1
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def apply_current_assignment(
        self, member_id: str, value: CurrentMemberAssignmentValue | None
    ) -> None:
        member = self.members.get(member_id)
        if member is None:
            if value is None:
                return
            member = ConsumerGroupMember(member_id)
            self.members[member_id] = member
        self._release(member)
        if value is None:
            member.member_epoch = member.previous_member_epoch = -1
            member.state = MemberState.STABLE
            member.assigned_partitions = EMPTY_ASSIGNMENT
            member.partitions_pending_revocation = EMPTY_ASSIGNMENT
        else:
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            member.state = MemberState.of(value.state)
            member.assigned_partitions = value.assigned_partitions
            member.partitions_pending_revocation = value.partitions_pending_revocation
            self._own(member)
        self._track_reconciled(member)

    def apply_regex(self, regex: str, value: tuple[tuple[str, ...], int, int] | None) -> None:
        old = self.regexes.pop(regex, None)
        if old is not None:
            self._forget_topics(old[0])
        if value is not None:
            self.regexes[regex] = value
            for name in value[0]:
                self._subscribed_topics[name] = self._subscribed_topics.get(name, 0) + 1
        self.regexes_refreshed_ms = max((v[2] for v in self.regexes.values()), default=None)

    def apply_target_assignment(self, member_id: str, value: Assignment | None) -> None:
        if value is None:
            self.target_assignment.pop(member_id, None)
        else:
            self.target_assignment[member_id] = value

    # -- bookkeeping ---------------------------------------------------------

    def _track_reconciled(self, member: ConsumerGroupMember) -> None:
        if member.is_reconciled_to(self.assignment_epoch):
            self._unreconciled.discard(member.member_id)
        else:
            self._unreconciled.add(member.member_id)

    def _forget_instance(self, member: ConsumerGroupMember) -> None:
        instance_id = member.instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member.member_id:
            del self.static_members[instance_id]

    def _forget_topics(self, names: tuple[str, ...]) -> None:
        for name in names:
            left = self._subscribed_topics[name] - 1
            if left:
                self._subscribed_topics[name] = left
            else:
                del self._subscribed_topics[name]

    def _forget_subscription(self, member: ConsumerGroupMember) -> None:
        self._forget_topics(member.subscribed_topic_names)
        regex = member.subscribed_topic_regex
        if regex:
            left = self._subscribed_regexes[regex] - 1
            if left:
                self._subscribed_regexes[regex] = left
            else:
                del self._subscribed_regexes[regex]
        if member.server_assignor:
            left = self._assignors_count[member.server_assignor] - 1
            if left:
                self._assignors_count[member.server_assignor] = left
            else:
                del self._assignors_count[member.server_assignor]

    def _own(self, member: ConsumerGroupMember) -> None:
        epoch = member.member_epoch
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in assignment.items():
                owners = self.partition_epochs.setdefault(topic_id, {})
                for partition in partitions:
                    owners[partition] = epoch

    def _release(self, member: ConsumerGroupMember) -> None:
        epoch = member.member_epoch
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, partitions in assignment.items():
                owners = self.partition_epochs.get(topic_id)
                if owners is None:
                    continue
                for partition in partitions:
                    # Only the member's own claim: another member may hold it now.
                    if owners.get(partition) == epoch:
                        del owners[partition]
                if not owners:
                    del self.partition_epochs[topic_id]
