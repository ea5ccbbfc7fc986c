"""A consumer-protocol member's metadata record: what a heartbeat makes of
it, and whether anything changed (a stable member's heartbeat writes none)."""

from __future__ import annotations

from kgroups.coordinator.consumer.heartbeat_messages import HeartbeatRequest
from kgroups.coordinator.consumer.member import ConsumerGroupMember
from kgroups.coordinator.consumer.records import MemberMetadataValue


def heartbeat_metadata(
    member: ConsumerGroupMember, request: HeartbeatRequest
) -> MemberMetadataValue:
    """The member's metadata after the heartbeat: each field the request
    leaves null (or -1) keeps its value."""
    names = (
        member.subscribed_topic_names
        if request.subscribed_topic_names is None
        else tuple(request.subscribed_topic_names)
    )
    return MemberMetadataValue(
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        client_id=request.client_id,
        client_host=request.client_host,
        subscribed_topic_names=names,
        subscribed_topic_regex=request.subscribed_topic_regex
        if request.subscribed_topic_regex is not None
        else member.subscribed_topic_regex,
        rebalance_timeout_ms=request.rebalance_timeout_ms
        if request.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        server_assignor=request.server_assignor
        if request.server_assignor is not None
        else member.server_assignor,
        # A member heartbeating with ConsumerGroupHeartbeat speaks the consumer protocol.
        classic_member_metadata=None,
    )


def same_metadata(member: ConsumerGroupMember, value: MemberMetadataValue) -> bool:
    return (
        member.instance_id == value.instance_id
        and member.rack_id == value.rack_id
        and member.client_id == value.client_id
        and member.client_host == value.client_host
        and member.subscribed_topic_names == value.subscribed_topic_names
        and member.subscribed_topic_regex == value.subscribed_topic_regex
        and member.rebalance_timeout_ms == value.rebalance_timeout_ms
        and member.server_assignor == value.server_assignor
        and member.classic == value.classic_member_metadata
    )
