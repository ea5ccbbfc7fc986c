"""A ConsumerGroupHeartbeat's checks, made before it writes anything: its
fields, and the member it names (member id, static instance id, epoch)."""

from __future__ import annotations

from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.heartbeat_messages import HeartbeatError, HeartbeatRequest
from kgroups.coordinator.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
)
from kgroups.coordinator.consumer.reconciliation import OwnedPartitions
from kgroups.coordinator.consumer.regex import InvalidRegex, compile_regex
from kgroups.coordinator.consumer_assignors import (
    Assignment,
    ConsumerGroupAssignor,
    UnsupportedAssignor,
    assignor,
)


def validate(request: HeartbeatRequest, offered: Mapping[str, ConsumerGroupAssignor]) -> None:
    """The request's fields, as Kafka checks them for the member epoch it sends."""

    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.invalid_request, message)

    if not request.group_id:
        raise invalid("GroupId can't be empty.")
    if request.instance_id == "":
        raise invalid("InstanceId can't be empty.")
    if request.rack_id == "":
        raise invalid("RackId can't be empty.")
    epoch = request.member_epoch
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not request.member_id:
            raise invalid("MemberId can't be empty.")
    elif epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned_partitions is None or request.owned_partitions:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if not request.subscribed_topic_names and request.subscribed_topic_regex is None:
            raise invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not request.member_id:
            raise invalid("MemberId can't be empty.")
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    else:
        raise invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None:
        try:
            assignor(request.server_assignor, offered)
        except UnsupportedAssignor as e:
            raise HeartbeatError(ErrorCode.unsupported_assignor, str(e)) from None


def heartbeating_member(
    group: ConsumerGroup, request: HeartbeatRequest, member_id: str, max_size: int
) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember | None]:
    """The member the heartbeat is from (None: a new one) and the static
    member it replaces (a static member rejoining under a new member id)."""
    joining = request.member_epoch == 0
    member = group.members.get(member_id)
    if member is None and len(group.members) >= max_size:
        raise HeartbeatError(
            ErrorCode.group_max_size_reached,
            f"The consumer group has reached its maximum capacity of {max_size} members.",
        )

    replaced: ConsumerGroupMember | None = None
    if request.instance_id is None:
        if member is None:
            if not joining:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id, f"Member {member_id} is not in the group."
                )
        else:
            check_epoch(member, request)
    else:
        static_id = group.static_members.get(request.instance_id)
        static = None if static_id is None else group.members[static_id]
        if joining:
            if static is not None:
                # Only a static member that left (epoch -2) can be replaced.
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise HeartbeatError(
                        ErrorCode.unreleased_instance_id,
                        f"Instance id {request.instance_id} is still owned by member "
                        f"{static.member_id}.",
                    )
                replaced = static
        else:
            if static is None:
                raise HeartbeatError(
                    ErrorCode.unknown_member_id,
                    f"Instance id {request.instance_id} is unknown.",
                )
            if static.member_id != member_id:
                raise HeartbeatError(
                    ErrorCode.fenced_instance_id,
                    f"Static member {member_id} with instance id {request.instance_id} "
                    f"was fenced by member {static.member_id}.",
                )
            member = static
            check_epoch(member, request)

    if (
        member is not None
        and member.state is MemberState.UNKNOWN
        and (request.owned_partitions is None or request.owned_partitions)
    ):
        # A state a newer coordinator wrote: start over without partitions.
        raise HeartbeatError(
            ErrorCode.fenced_member_epoch,
            "The member is in an unknown state; it must give up its partitions and rejoin.",
        )

    regex = request.subscribed_topic_regex
    if (
        regex
        and (member is None or regex != member.subscribed_topic_regex)
        and not group.regex_subscribers(regex)
    ):
        # A regex new to the group: refused before anything is stored.
        try:
            compile_regex(regex)
        except InvalidRegex as e:
            raise HeartbeatError(ErrorCode.invalid_regular_expression, str(e)) from None
    return member, replaced


def leaving_member(group: ConsumerGroup, request: HeartbeatRequest) -> ConsumerGroupMember:
    """The member a heartbeat with a leave epoch (-1 or -2) is from."""
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise HeartbeatError(
                ErrorCode.unknown_member_id, f"Member {request.member_id} is not in the group."
            )
        return member
    static_id = group.static_members.get(request.instance_id)
    if static_id is None:
        raise HeartbeatError(
            ErrorCode.unknown_member_id, f"Instance id {request.instance_id} is unknown."
        )
    if static_id != request.member_id:
        raise HeartbeatError(
            ErrorCode.fenced_instance_id,
            f"Static member {request.member_id} with instance id "
            f"{request.instance_id} was fenced by member {static_id}.",
        )
    return group.members[static_id]


def check_epoch(member: ConsumerGroupMember, request: HeartbeatRequest) -> None:
    received = request.member_epoch
    if received == member.member_epoch:
        return
    if received > member.member_epoch or not (
        received == member.previous_member_epoch
        and _is_subset(request.owned_partitions, member.assigned_partitions)
    ):
        raise HeartbeatError(
            ErrorCode.fenced_member_epoch,
            f"The member epoch ({received}) does not match the coordinator's "
            f"({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )


def _is_subset(owned: OwnedPartitions | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        have = assigned.get(topic_id)
        if have is None:
            return False
        if any(p not in have for p in partitions):
            return False
    return True
