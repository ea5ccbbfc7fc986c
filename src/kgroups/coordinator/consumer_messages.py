"""ConsumerGroupHeartbeat and ConsumerGroupDescribe as the wire has them
(kio's newest schemas), to and from the consumer group model."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable

from kio.schema.consumer_group_describe.v1 import response as describe
from kio.schema.consumer_group_heartbeat.v1 import response as heartbeat
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from kgroups.coordinator.consumer import (
    ConsumerGroup,
    ConsumerGroupCoordinator,
    HeartbeatAnswer,
    HeartbeatRequest,
)
from kgroups.coordinator.consumer_assignors.spec import Assignment
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.responses import NO_THROTTLE
from kgroups.protocol.types import GroupId, TopicName, i8, i32

_MILLISECOND = datetime.timedelta(milliseconds=1)
# ConsumerGroupDescribe's member type (v1): the protocol the member speaks.
CLASSIC_MEMBER = i8(0)
CONSUMER_MEMBER = i8(1)

TopicNames = Callable[[uuid.UUID], str | None]


def heartbeat_request(req: ConsumerGroupHeartbeatRequest, ctx: RequestContext) -> HeartbeatRequest:
    owned = req.topic_partitions
    return HeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=round(req.rebalance_timeout / _MILLISECOND),
        subscribed_topic_names=req.subscribed_topic_names,
        subscribed_topic_regex=req.subscribed_topic_regex,
        server_assignor=req.server_assignor,
        owned_partitions=None
        if owned is None
        else tuple((tp.topic_id, tp.partitions) for tp in owned if tp.topic_id is not None),
        client_id=ctx.client_id,
        client_host=ctx.client_host,
    )


def consumer_heartbeat_response(
    answer: HeartbeatAnswer,
) -> heartbeat.ConsumerGroupHeartbeatResponse:
    assigned = answer.assignment
    return heartbeat.ConsumerGroupHeartbeatResponse(
        throttle_time=NO_THROTTLE,
        error_code=answer.error_code,
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=i32(answer.member_epoch),
        heartbeat_interval=i32Timedelta.parse(
            datetime.timedelta(milliseconds=answer.heartbeat_interval_ms)
        ),
        assignment=None
        if assigned is None
        else heartbeat.Assignment(
            topic_partitions=tuple(
                heartbeat.TopicPartitions(
                    topic_id=topic_id, partitions=tuple(i32(p) for p in sorted(partitions))
                )
                for topic_id, partitions in assigned.items()
            )
        ),
    )


def heartbeat_error(code: ErrorCode, message: str | None = None) -> HeartbeatAnswer:
    return HeartbeatAnswer(error_code=code, error_message=message)


def described_group(
    group_id: str,
    group: ConsumerGroup | None,
    assignor_name: str,
    topic_name: TopicNames,
    error: ErrorCode = ErrorCode.none,
) -> describe.DescribedGroup:
    if group is None or error is not ErrorCode.none:
        if error is ErrorCode.none:
            error = ErrorCode.group_id_not_found
        return describe.DescribedGroup(
            error_code=error,
            error_message=(
                f"Group {group_id} not found." if error is ErrorCode.group_id_not_found else None
            ),
            group_id=GroupId(group_id),
            group_state="Dead" if error is ErrorCode.group_id_not_found else "",
            group_epoch=i32(-1),
            assignment_epoch=i32(-1),
            assignor_name="",
            members=(),
        )

    def assignment(partitions: Assignment) -> describe.Assignment:
        return describe.Assignment(
            topic_partitions=tuple(
                describe.TopicPartitions(
                    topic_id=topic_id,
                    topic_name=TopicName(topic_name(topic_id) or ""),
                    partitions=tuple(i32(p) for p in sorted(ps)),
                )
                for topic_id, ps in partitions.items()
            )
        )

    return describe.DescribedGroup(
        error_code=ErrorCode.none,
        group_id=GroupId(group_id),
        group_state=str(group.state),
        group_epoch=i32(group.group_epoch),
        assignment_epoch=i32(max(group.assignment_epoch, 0)),
        assignor_name=assignor_name,
        members=tuple(
            describe.Member(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=i32(m.member_epoch),
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=tuple(TopicName(n) for n in m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=assignment(m.assigned_partitions),
                target_assignment=assignment(group.target_of(m.member_id)),
                member_type=CONSUMER_MEMBER if m.classic is None else CLASSIC_MEMBER,
            )
            for m in group.members.values()
        ),
    )


def consumer_group_describe_response(
    group_ids: Iterable[str],
    consumer: ConsumerGroupCoordinator,
    topic_name: TopicNames,
    loading: bool,
) -> describe.ConsumerGroupDescribeResponse:
    """The groups a shard owns (the shell merges the shards' answers)."""
    groups = []
    for group_id in group_ids:
        group = consumer.table.get(group_id)
        if loading:
            error = ErrorCode.coordinator_load_in_progress
            groups.append(described_group(group_id, None, "", topic_name, error))
        elif group is None:
            groups.append(described_group(group_id, None, "", topic_name))
        else:
            assignor = consumer.assignor_name(group)
            groups.append(described_group(group_id, group, assignor, topic_name))
    return describe.ConsumerGroupDescribeResponse(throttle_time=NO_THROTTLE, groups=tuple(groups))
