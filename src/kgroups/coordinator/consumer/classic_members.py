"""Classic-protocol members inside a consumer group, and the online
conversions between classic and consumer groups (KIP-848 migration), sans IO.

A classic group whose members use the "consumer" embedded protocol becomes a
consumer group when a ConsumerGroupHeartbeat member joins it (``upgrade``):
each classic member becomes a consumer group member at the classic
generation, keeping the partitions its last assignment gave it, so nothing
is consumed twice while the new target assignment is reconciled.

Inside a consumer group a classic member keeps speaking JoinGroup, SyncGroup,
Heartbeat and LeaveGroup. The coordinator computes its assignment like any
member's: JoinGroup is one reconciliation step (the subscription's owned
partitions say what it still holds), SyncGroup hands the member its assigned
partitions in the consumer protocol, and Heartbeat answers
REBALANCE_IN_PROGRESS while the member must rejoin to move on (its epoch
behind the group's, partitions to give up, or released partitions waiting).
Its session uses the session timeout of its JoinGroup; a member told to
rejoin, or that joined, has its rebalance timeout to send the next JoinGroup
or SyncGroup.

When the last consumer-protocol member leaves and only classic members stay,
the group becomes a classic group again (``downgrade``), at the assignment
epoch as generation, each member with its target assignment; the shard then starts
a rebalance of the classic group.

Every conversion is records: the tombstones of the kind that goes and the
records of the kind that comes, so a reload finds the right kind.
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter
from collections.abc import Sequence

from kio.schema.errors import ErrorCode
from kio.schema.join_group.v9.request import JoinGroupRequest
from kio.schema.join_group.v9.response import JoinGroupResponse
from kio.schema.leave_group.v5.request import LeaveGroupRequest
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.sync_group.v5.request import SyncGroupRequest
from kio.schema.sync_group.v5.response import SyncGroupResponse

from kgroups.assignors.protocol import (
    LATEST_VERSION,
    ProtocolError,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from kgroups.assignors.protocol import Assignment as ProtocolAssignment
from kgroups.coordinator.consumer.coordinator import ConsumerGroupCoordinator, Record
from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.heartbeat_messages import HeartbeatError
from kgroups.coordinator.consumer.member import ConsumerGroupMember, MemberState
from kgroups.coordinator.consumer.member_removal import remove_member
from kgroups.coordinator.consumer.reconciliation_step import reconcile_member
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    ClassicMemberMetadata,
    CurrentMemberAssignmentValue,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    MemberMetadataValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    assignment_of,
)
from kgroups.coordinator.consumer.timer_keys import CLASSIC_JOIN, ConsumerTimerKey
from kgroups.coordinator.consumer.topics import TopicsView, metadata_hash
from kgroups.coordinator.consumer_assignors.spec import Assignment
from kgroups.coordinator.consumer_messages import TopicNames
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.records import GroupMetadataValue as ClassicGroupValue
from kgroups.coordinator.records import MemberMetadataValue as ClassicMemberValue
from kgroups.coordinator.responses import (
    join_error,
    join_response,
    leave_response,
    sync_response,
)
from kgroups.coordinator.subscriptions import CONSUMER_PROTOCOL_TYPE

Protocols = tuple[tuple[str, bytes], ...]
_MILLISECOND = datetime.timedelta(milliseconds=1)


class ClassicProtocolMembers:
    def __init__(self, coordinator: ConsumerGroupCoordinator, topic_name: TopicNames) -> None:
        self._c = coordinator
        self._topic_name = topic_name

    # -- upgrade -------------------------------------------------------------

    def may_upgrade(self, classic: ClassicGroup) -> bool:
        """Kafka's conditions for converting a non-empty classic group online."""
        config = self._c.config
        return (
            config.upgrade_enabled
            and classic.is_consumer_group()
            and len(classic.members) <= config.max_size
        )

    def upgrade(self, classic: ClassicGroup, topics: TopicsView, now_ms: int) -> list[Record]:
        """Write the classic group's members as a consumer group (already
        applied): each keeps its assignment, at the classic generation.
        HeartbeatError(GROUP_ID_NOT_FOUND) for metadata that does not decode."""
        c = self._c
        group_id = classic.group_id
        epoch = classic.generation_id
        converted = []
        try:
            for member in classic.members.values():
                protocol = classic.protocol_name or member.protocols[0][0]
                subscription = decode_subscription(member.metadata(protocol))
                partitions = (
                    decode_assignment(member.assignment).partitions if member.assignment else []
                )
                converted.append((member, subscription, _assignment(partitions, topics)))
        except (ProtocolError, KeyError) as e:
            raise HeartbeatError(
                ErrorCode.group_id_not_found,
                f"Cannot upgrade the classic group {group_id} to a consumer group because "
                f"the embedded consumer protocol is malformed: {e}.",
            ) from None
        for member, subscription, _ in converted:
            c._emit(
                MemberKey(MEMBER_METADATA, group_id, member.member_id),
                MemberMetadataValue(
                    instance_id=member.group_instance_id,
                    rack_id=subscription.rack_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    subscribed_topic_names=tuple(subscription.topics),
                    subscribed_topic_regex=None,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    server_assignor=None,
                    classic_member_metadata=ClassicMemberMetadata(
                        member.session_timeout_ms, member.protocols
                    ),
                ),
            )
        group = c.table.groups[group_id]
        group.topics_version_seen = topics.version
        c._emit(
            GroupKey(GROUP_METADATA, group_id),
            GroupMetadataValue(epoch, metadata_hash(group.subscribed_topic_names(), topics)),
        )
        for member, _, assigned in converted:
            c._emit(
                MemberKey(TARGET_ASSIGNMENT_MEMBER, group_id, member.member_id),
                TargetAssignmentMemberValue(assigned),
            )
        c._emit(
            GroupKey(TARGET_ASSIGNMENT_METADATA, group_id), TargetAssignmentMetadataValue(epoch)
        )
        for member, _, assigned in converted:
            c._emit(
                MemberKey(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id),
                CurrentMemberAssignmentValue(
                    epoch, epoch, int(MemberState.STABLE), assigned, assignment_of({})
                ),
            )
        for converted_member in group.members.values():
            c.schedule_session(group_id, converted_member, now_ms)
        return c._take_records()

    # -- JoinGroup -----------------------------------------------------------

    def join(
        self,
        group: ConsumerGroup,
        req: JoinGroupRequest,
        ctx: RequestContext,
        topics: TopicsView,
        now_ms: int,
    ) -> tuple[list[Record], JoinGroupResponse]:
        c = self._c
        version = ctx.api_version
        member_id = req.member_id or c._new_member_id()
        protocols: Protocols = tuple((p.name, p.metadata) for p in req.protocols)
        try:
            if member_id not in group.members and len(group.members) >= c.config.max_size:
                raise HeartbeatError(ErrorCode.group_max_size_reached, "The group is full.")
            if not _supports(group, req.protocol_type, protocols):
                raise HeartbeatError(ErrorCode.inconsistent_group_protocol, "")
            if not req.member_id and req.group_instance_id is None and version >= 4:
                # A dynamic member first gets its id, then joins with it (KIP-394).
                return [], join_error(version, ErrorCode.member_id_required, member_id)
            try:
                subscription = decode_subscription(protocols[0][1])
            except ProtocolError:
                raise HeartbeatError(ErrorCode.inconsistent_group_protocol, "") from None
            member = group.members.get(member_id)
            if req.group_instance_id is not None:
                static_id = group.static_members.get(req.group_instance_id)
                if static_id is not None and static_id != member_id:
                    if req.member_id:
                        raise HeartbeatError(ErrorCode.fenced_instance_id, "")
                    # A static member restarting takes over its old self.
                    member = c._replace(group, group.members[static_id], member_id)
            if member is None:
                member = ConsumerGroupMember(member_id)
        except HeartbeatError as e:
            assert not c._records
            return [], join_error(version, e.code, req.member_id)

        session_timeout_ms = round(req.session_timeout / _MILLISECOND)
        rebalance_timeout_ms = (
            session_timeout_ms if version == 0 else round(req.rebalance_timeout / _MILLISECOND)
        )
        bump = c._write_member(
            group,
            member,
            MemberMetadataValue(
                instance_id=req.group_instance_id,
                rack_id=subscription.rack_id,
                client_id=ctx.client_id,
                client_host=ctx.client_host,
                subscribed_topic_names=tuple(subscription.topics),
                subscribed_topic_regex=None,
                rebalance_timeout_ms=rebalance_timeout_ms,
                server_assignor=None,
                classic_member_metadata=ClassicMemberMetadata(session_timeout_ms, protocols),
            ),
        )
        group = c.table.groups[group.group_id]
        member = group.members[member_id]
        c._advance(group, bump, topics, now_ms)
        owned = _owned(subscription.owned_partitions, topics)
        if not member.is_reconciled_to(group.assignment_epoch):
            reconcile_member(group, member, owned, now_ms, c._emit, c.timers)
        c.schedule_session(group.group_id, member, now_ms)
        # The member has its rebalance timeout to send SyncGroup.
        c.timers.schedule(
            ConsumerTimerKey(CLASSIC_JOIN, group.group_id, member_id),
            now_ms + rebalance_timeout_ms,
            0,
        )
        return c._take_records(), join_response(
            version,
            ErrorCode.none,
            member_id,
            generation_id=member.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0],
        )

    # -- SyncGroup, Heartbeat, LeaveGroup --------------------------------------

    def sync(self, group: ConsumerGroup, req: SyncGroupRequest, now_ms: int) -> SyncGroupResponse:
        member, error = self._validate(
            group, req.member_id, req.group_instance_id, req.generation_id
        )
        if member is None or member.classic is None:
            return sync_response(error)
        protocol_name, metadata = member.classic.supported_protocols[0]
        if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            req.protocol_name is not None and req.protocol_name != protocol_name
        ):
            return sync_response(ErrorCode.inconsistent_group_protocol)
        self._c.timers.cancel(ConsumerTimerKey(CLASSIC_JOIN, group.group_id, member.member_id))
        self._c.schedule_session(group.group_id, member, now_ms)
        return sync_response(
            ErrorCode.none,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocol_name,
            assignment=encode_assignment(
                ProtocolAssignment(self._partitions(member.assigned_partitions)),
                _version(metadata),
            ),
        )

    def heartbeat(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        now_ms: int,
        *,
        may_arm: bool = True,
    ) -> ErrorCode | None:
        """The Heartbeat answer. A member told to rejoin gets its rebalance
        timeout armed: without ``may_arm`` (the shell's fast path, which keeps
        its timer as it is) that is None instead, and nothing changes."""
        member, error = self._validate(group, member_id, instance_id, generation_id)
        if member is None:
            return error
        c = self._c
        rejoin = (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not _waits_for_release(group, member)
            )
        )
        key = ConsumerTimerKey(CLASSIC_JOIN, group.group_id, member_id)
        arm = rejoin and key not in c.timers
        if arm and not may_arm:
            return None
        c.schedule_session(group.group_id, member, now_ms)
        if arm:
            c.timers.schedule(key, now_ms + member.rebalance_timeout_ms, 0)
        return ErrorCode.rebalance_in_progress if rejoin else ErrorCode.none

    def leave(
        self,
        group: ConsumerGroup,
        req: LeaveGroupRequest,
        api_version: int,
        topics: TopicsView,
    ) -> tuple[list[Record], LeaveGroupResponse]:
        results = []
        for identity in req.members:
            member_id, instance_id = identity.member_id, identity.group_instance_id
            error = ErrorCode.none
            found = group.members.get(member_id) if member_id else None
            if not member_id and instance_id is not None:
                static_id = group.static_members.get(instance_id)
                found = None if static_id is None else group.members[static_id]
            if found is None:
                error = ErrorCode.unknown_member_id
            elif instance_id is not None and found.instance_id != instance_id:
                error = ErrorCode.fenced_instance_id
            elif member_id and found.classic is None:
                # Only an admin removal by instance id reaches a consumer-protocol member.
                error = ErrorCode.unknown_member_id
            else:
                self._c._fence(group, found.member_id, topics)
            results.append(
                MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=error)
            )
        return self._c._take_records(), leave_response(api_version, ErrorCode.none, tuple(results))

    def _validate(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
    ) -> tuple[ConsumerGroupMember | None, ErrorCode]:
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            return None, ErrorCode.unknown_member_id
        if instance_id is not None and member.instance_id != instance_id:
            return None, ErrorCode.fenced_instance_id
        if generation_id != member.member_epoch:
            return None, ErrorCode.illegal_generation
        return member, ErrorCode.none

    # -- downgrade -----------------------------------------------------------

    def may_downgrade(self, group: ConsumerGroup, classic_max_size: int) -> bool:
        """Only classic-protocol members are left, and the policy and group.max.size allow."""
        return (
            self._c.config.downgrade_enabled
            and bool(group.members)
            and group.all_members_classic()
            and len(group.members) <= classic_max_size
        )

    def downgrade(
        self, group: ConsumerGroup, now_ms: int
    ) -> tuple[list[Record], ClassicGroupValue]:
        """The consumer group's tombstones (already applied) and the classic
        group metadata that replaces it: the assignment epoch as generation,
        each member with its target assignment."""
        c = self._c
        group_id = group.group_id
        members = list(group.members.values())
        protocol = _select_protocol(members)
        value = ClassicGroupValue(
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            # The epoch the members reconciled towards, before the leave moved the
            # group epoch on: reconciled members heartbeat on with their generation.
            generation=group.assignment_epoch,
            protocol=protocol,
            leader=members[0].member_id,
            current_state_timestamp=now_ms,
            members=tuple(self._classic_member(group, m, protocol) for m in members),
        )
        for member in members:
            remove_member(group_id, member.member_id, c._emit, c.timers)
        return c.delete_group(group_id), value  # with the records above

    def _classic_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, protocol: str
    ) -> ClassicMemberValue:
        assert member.classic is not None
        metadata = dict(member.classic.supported_protocols)[protocol]
        return ClassicMemberValue(
            member_id=member.member_id,
            group_instance_id=member.instance_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rebalance_timeout=member.rebalance_timeout_ms,
            session_timeout=member.classic.session_timeout_ms,
            subscription=metadata,
            assignment=encode_assignment(
                ProtocolAssignment(self._partitions(group.target_of(member.member_id))),
                _version(metadata),
            ),
        )

    def _partitions(self, assignment: Assignment) -> list[TopicPartition]:
        partitions: list[TopicPartition] = []
        for topic_id, numbers in assignment.items():
            name = self._topic_name(topic_id)
            if name is not None:
                partitions.extend(TopicPartition(name, p) for p in sorted(numbers))
        return partitions


def _assignment(partitions: Sequence[TopicPartition], topics: TopicsView) -> Assignment:
    by_id: dict[uuid.UUID, set[int]] = {}
    for topic, partition in partitions:
        info = topics.lookup(topic)
        if info is not None:
            by_id.setdefault(info.topic_id, set()).add(partition)
    return assignment_of({topic_id: frozenset(p) for topic_id, p in by_id.items()})


def _owned(
    partitions: Sequence[TopicPartition], topics: TopicsView
) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    return tuple(
        (topic_id, tuple(numbers)) for topic_id, numbers in _assignment(partitions, topics).items()
    )


def _supports(group: ConsumerGroup, protocol_type: str, protocols: Protocols) -> bool:
    """The "consumer" protocol type, and a protocol every classic member supports."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(
        all(any(name == n for n, _ in meta.supported_protocols) for meta in classic)
        for name, _ in protocols
    )


def _select_protocol(members: Sequence[ConsumerGroupMember]) -> str:
    """As a classic group chooses: each member votes for its most preferred
    protocol among those all support; the most votes win."""
    supported = [[name for name, _ in m.classic.supported_protocols] for m in members if m.classic]
    common = set(supported[0]).intersection(*supported[1:])
    votes: Counter[str] = Counter(next(n for n in names if n in common) for names in supported)
    return max(votes, key=lambda name: votes[name])


def _waits_for_release(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Whether a partition of its target is still owned by another member."""
    for topic_id, partitions in group.target_of(member.member_id).items():
        have = member.assigned_partitions.get(topic_id, frozenset())
        for partition in partitions:
            if partition not in have and group.partition_epoch(topic_id, partition) != -1:
                return True
    return False


def _version(metadata: bytes) -> int:
    """The consumer protocol version a member's subscription speaks (its
    assignment is written in the same, as Kafka does)."""
    if len(metadata) < 2:
        return 0
    return max(0, min(int.from_bytes(metadata[:2], "big", signed=True), LATEST_VERSION))
