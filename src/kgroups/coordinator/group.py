"""A classic group: its members, generation, leader, protocol and offsets.

This is bookkeeping only — the rules for when to rebalance and what to answer
live in the membership handlers. Everything that must stay consistent across
members (the count of parked JoinGroups, votes per protocol, the static
instance map) is kept here, updated in O(1) per member change, so completing
a join phase over n members costs O(n), never O(n²).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator

from kgroups.coordinator.member import Member, Protocols
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.state import GroupState, check_transition
from kgroups.coordinator.subscriptions import (
    CONSUMER_PROTOCOL_TYPE,
    UnreadableSubscription,
    union_of_subscriptions,
)


class ClassicGroup:
    def __init__(
        self,
        group_id: str,
        state: GroupState = GroupState.EMPTY,
        state_timestamp_ms: int | None = None,
    ) -> None:
        self.group_id = group_id
        # Set by the group table; tells this group apart from a later one with the same id.
        self.incarnation = 0
        self._state = state
        # When the group entered its state; offsets of an Empty group expire
        # counting from here.
        self.state_timestamp_ms = state_timestamp_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self._static_members: dict[str, str] = {}
        # Member ids handed out with MEMBER_ID_REQUIRED, awaiting their JoinGroup (KIP-394).
        self.pending_members: set[str] = set()
        # Members of the current generation that have not sent SyncGroup yet.
        self.pending_sync_members: set[str] = set()
        self._num_awaiting_join = 0
        self._protocol_votes: Counter[str] = Counter()
        # None when unknown (not a consumer group, or metadata unreadable).
        self.subscribed_topics: frozenset[str] | None = None
        # Lets the initial rebalance delay be extended while members keep coming.
        self.new_member_added = False
        self.offsets: dict[TopicPartition, CommittedOffset] = {}

    def copy(self) -> ClassicGroup:
        """A copy that later changes to this group leave alone (members and
        offsets included), to put back if those changes are lost."""
        twin = copy.copy(self)
        twin.members = {member_id: copy.copy(m) for member_id, m in self.members.items()}
        twin._static_members = dict(self._static_members)
        twin.pending_members = set(self.pending_members)
        twin.pending_sync_members = set(self.pending_sync_members)
        twin._protocol_votes = Counter(self._protocol_votes)
        twin.offsets = dict(self.offsets)
        return twin

    # -- state -------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        return self._state

    def is_in(self, state: GroupState) -> bool:
        return self._state is state

    def transition_to(self, target: GroupState, timestamp_ms: int | None) -> None:
        check_transition(self._state, target)
        self._state = target
        self.state_timestamp_ms = timestamp_ms

    def can_rebalance(self) -> bool:
        return self._state in (
            GroupState.EMPTY,
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
        )

    # -- membership --------------------------------------------------------

    def __len__(self) -> int:
        return len(self.members)

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self._static_members.get(group_instance_id)

    @property
    def num_awaiting_join(self) -> int:
        return self._num_awaiting_join

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self._num_awaiting_join and not self.pending_members

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self._static_members:
                raise ValueError(
                    f"static member {member.group_instance_id} is already in the group"
                )
            self._static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._protocol_votes.update(member.protocol_names)
        if member.is_awaiting_join:
            self._num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._protocol_votes.subtract(member.protocol_names)
            if member.is_awaiting_join:
                self._num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self._static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> None:
        self._protocol_votes.subtract(member.protocol_names)
        member.set_protocols(protocols)
        self._protocol_votes.update(member.protocol_names)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def park_join(self, member: Member, reply_to: object, api_version: int) -> None:
        if not member.is_awaiting_join:
            self._num_awaiting_join += 1
        member.awaiting_join = reply_to
        member.join_api_version = api_version

    def take_join(self, member: Member) -> object | None:
        """The parked JoinGroup's reply_to, now unparked; None if none was parked."""
        reply_to = member.awaiting_join
        if reply_to is not None:
            member.awaiting_join = None
            self._num_awaiting_join -= 1
        return reply_to

    def take_sync(self, member: Member) -> object | None:
        reply_to = member.awaiting_sync
        member.awaiting_sync = None
        return reply_to

    def replace_static_member(self, group_instance_id: str, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id, keeping everything else.

        The caller answers any JoinGroup or SyncGroup the old id had parked.
        """
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self._static_members[group_instance_id] = new_id
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote any member that did.

        False when there is no leader (empty group) or nobody rejoined.
        """
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ---------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: frozenset[str]) -> bool:
        """Whether a member with these protocols may join.

        An empty group takes any non-empty type and protocol list; otherwise
        the type must match and at least one protocol must be supported by
        every current member.
        """
        if self.is_in(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocol_names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(
            self._protocol_votes[name] == size for name in protocol_names
        )

    def select_protocol(self) -> str:
        """The protocol all members support that most members prefer.

        Each member votes for its most preferred protocol among those every
        member supports; ties go to the protocol that got its first vote first.
        """
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        size = len(self.members)
        candidates = {name for name, count in self._protocol_votes.items() if count == size}
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        try:
            return union_of_subscriptions(
                m.metadata(self.protocol_name) for m in self.members.values()
            )
        except (UnreadableSubscription, KeyError):
            return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        # Unknown subscriptions count as subscribed, to be safe.
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def current_member_metadata(self) -> Iterator[tuple[Member, bytes]]:
        """Each member with its metadata for the chosen protocol (for the leader)."""
        protocol = self.protocol_name
        if protocol is None or self._state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise ValueError(f"group {self.group_id} has no member metadata in {self._state}")
        for member in self.members.values():
            yield member, member.metadata(protocol)

    def start_next_generation(self, timestamp_ms: int) -> None:
        """Begin a generation with the members that joined (at least one)."""
        if not self.members:
            raise ValueError(f"group {self.group_id} has no members for a new generation")
        self.generation_id += 1
        self.protocol_name = self.select_protocol()
        self.subscribed_topics = self.compute_subscribed_topics()
        self.transition_to(GroupState.COMPLETING_REBALANCE, timestamp_ms)
        self.pending_sync_members.clear()

    # -- offsets -----------------------------------------------------------

    def has_offsets(self) -> bool:
        return bool(self.offsets)
