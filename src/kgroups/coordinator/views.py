"""Read-only pictures of groups: DescribeGroups, ListGroups, metrics and CLI."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.describe_groups.v6.response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)
from kio.schema.errors import ErrorCode
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.list_groups.v5.response import ListedGroup, ListGroupsResponse

from kgroups.coordinator.consumer import ConsumerGroup
from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.responses import NO_THROTTLE
from kgroups.coordinator.share.group import ShareGroup
from kgroups.coordinator.state import GroupState
from kgroups.protocol.types import GroupId

# Every group this coordinator runs uses the classic protocol.
CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
# What ListGroups shows as a consumer group's protocol type, as Kafka does.
CONSUMER_PROTOCOL_TYPE = "consumer"
# A share group's type and, in ListGroups, its protocol type (Kafka's "share").
SHARE_GROUP_TYPE = "share"


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[str, ...]
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupView:
    group_id: str
    state: GroupState
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberView, ...]
    offsets: MappingProxyType[TopicPartition, CommittedOffset]


def group_view(group: ClassicGroup) -> GroupView:
    return GroupView(
        group_id=group.group_id,
        state=group.state,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id,
        members=tuple(
            MemberView(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                protocols=tuple(name for name, _ in m.protocols),
                assignment=m.assignment,
            )
            for m in group.members.values()
        ),
        offsets=MappingProxyType(dict(group.offsets)),
    )


@dataclass(frozen=True, slots=True)
class ShareGroupView:
    group_id: str
    state: str
    members: int
    group_epoch: int


def share_group_view(group: ShareGroup) -> ShareGroupView:
    return ShareGroupView(group.group_id, str(group.state), len(group.members), group.group_epoch)


def describe_group(
    group_id: str, group: ClassicGroup | None, api_version: int, *, other_kind: bool = False
) -> DescribedGroup:
    """``group`` None: no classic group has this id; ``other_kind``: a consumer
    group has it. Either way Kafka 4.x says Dead, and from v6 (KIP-1043) also
    GROUP_ID_NOT_FOUND with its exception's message."""
    if group is None:
        if api_version >= 6:
            return described(
                group_id,
                ErrorCode.group_id_not_found,
                state=str(GroupState.DEAD),
                error_message=(
                    f"Group {group_id} is not a classic group."
                    if other_kind
                    else f"Group {group_id} not found."
                ),
            )
        return described(group_id, ErrorCode.none, state=str(GroupState.DEAD))
    stable = group.is_in(GroupState.STABLE) and group.protocol_name is not None
    protocol = group.protocol_name if stable and group.protocol_name is not None else ""
    # Metadata and assignments only mean something once the group is Stable.
    members = tuple(
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(protocol) if stable else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    )
    return described(
        group_id,
        ErrorCode.none,
        state=str(group.state),
        protocol_type=group.protocol_type or "",
        protocol_data=protocol,
        members=members,
    )


def described(
    group_id: str,
    error: ErrorCode,
    *,
    state: str = "",
    protocol_type: str = "",
    protocol_data: str = "",
    members: tuple[DescribedGroupMember, ...] = (),
    error_message: str | None = None,
) -> DescribedGroup:
    return DescribedGroup(
        error_code=error,
        error_message=error_message,
        group_id=GroupId(group_id),
        group_state=state,
        protocol_type=protocol_type,
        protocol_data=protocol_data,
        members=members,
    )


def listed_groups(
    group_type: str,
    groups: Iterable[tuple[str, str, str]],
    states_filter: Iterable[str],
    types_filter: Iterable[str],
) -> tuple[ListedGroup, ...]:
    """``groups`` (id, protocol type, state) of one type, those matching both
    filters; an empty filter matches everything (case-insensitive)."""
    states = {s.lower() for s in states_filter}
    types = {t.lower() for t in types_filter}
    if types and group_type not in types:
        return ()
    return tuple(
        ListedGroup(
            group_id=GroupId(group_id),
            protocol_type=protocol_type,
            group_state=state,
            group_type=group_type,
        )
        for group_id, protocol_type, state in groups
        if not states or state.lower() in states
    )


def describe_groups_response(
    req: DescribeGroupsRequest,
    classic_group: Callable[[str], ClassicGroup | None],
    other_kind: Callable[[str], bool],
    api_version: int,
) -> DescribeGroupsResponse:
    """The groups of the request a shard owns; a consumer or share group id
    (``other_kind``) is described as a group the classic protocol does not know."""
    return DescribeGroupsResponse(
        throttle_time=NO_THROTTLE,
        groups=tuple(
            describe_group(g, None, api_version, other_kind=True)
            if other_kind(g)
            else describe_group(g, classic_group(g), api_version)
            for g in req.groups
        ),
    )


def list_groups_response(
    req: ListGroupsRequest,
    classic: Iterable[ClassicGroup],
    consumer: Mapping[str, ConsumerGroup],
    share: Mapping[str, ShareGroup],
    error: ErrorCode,
) -> ListGroupsResponse:
    """A shard's groups of every kind (the shell concatenates the shards' lists)."""
    states, types = req.states_filter, req.types_filter
    classic_groups = (
        (g.group_id, g.protocol_type or "", str(g.state))
        for g in classic
        if g.group_id not in consumer and g.group_id not in share
    )
    consumer_groups = (
        (g.group_id, CONSUMER_PROTOCOL_TYPE, str(g.state)) for g in consumer.values()
    )
    return ListGroupsResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        groups=listed_groups(CLASSIC_GROUP_TYPE, classic_groups, states, types)
        + listed_groups(CONSUMER_GROUP_TYPE, consumer_groups, states, types)
        + listed_groups(
            SHARE_GROUP_TYPE,
            ((g.group_id, SHARE_GROUP_TYPE, str(g.state)) for g in share.values()),
            states,
            types,
        ),
    )
