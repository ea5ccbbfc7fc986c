"""ShareGroupHeartbeat and ShareGroupDescribe responses, from the share
group coordinator's answers and groups."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable

from kio.schema.errors import ErrorCode
from kio.schema.share_group_describe.v1 import response as describe
from kio.schema.share_group_heartbeat.v1 import response as heartbeat
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.static.primitive import i32, i32Timedelta

from kgroups.coordinator.consumer_assignors.spec import Assignment
from kgroups.coordinator.consumer_messages import TopicNames
from kgroups.coordinator.responses import NO_THROTTLE
from kgroups.coordinator.share.assignor import NAME as ASSIGNOR_NAME
from kgroups.coordinator.share.coordinator import ShareHeartbeatAnswer, ShareHeartbeatRequest
from kgroups.coordinator.share.group import ShareGroup
from kgroups.coordinator.share.table import ShareGroupTable
from kgroups.protocol.types import GroupId, TopicName


def share_heartbeat_request(
    req: ShareGroupHeartbeatRequest, client_id: str, client_host: str
) -> ShareHeartbeatRequest:
    names = req.subscribed_topic_names
    return ShareHeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=int(req.member_epoch),
        rack_id=req.rack_id,
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        client_id=client_id,
        client_host=client_host,
    )


def share_heartbeat_response(answer: ShareHeartbeatAnswer) -> heartbeat.ShareGroupHeartbeatResponse:
    assigned = answer.assignment
    return heartbeat.ShareGroupHeartbeatResponse(
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
                for topic_id, partitions in sorted(assigned.items())
            )
        ),
    )


def share_heartbeat_error(code: ErrorCode, message: str | None = None) -> ShareHeartbeatAnswer:
    return ShareHeartbeatAnswer(error_code=code, error_message=message)


def described_error(
    group_id: str, error: ErrorCode, message: str | None
) -> describe.DescribedGroup:
    return describe.DescribedGroup(
        error_code=error,
        error_message=message,
        group_id=GroupId(group_id),
        group_state="Dead" if error is ErrorCode.group_id_not_found else "",
        group_epoch=i32(-1),
        assignment_epoch=i32(-1),
        assignor_name="",
        members=(),
    )


def described_share_group(group: ShareGroup, topic_name: TopicNames) -> describe.DescribedGroup:
    def assignment(partitions: Assignment) -> describe.Assignment:
        return describe.Assignment(
            topic_partitions=tuple(
                describe.TopicPartitions(
                    topic_id=topic_id,
                    topic_name=TopicName(topic_name(topic_id) or ""),
                    partitions=tuple(i32(p) for p in sorted(ps)),
                )
                for topic_id, ps in sorted(partitions.items())
            )
        )

    return describe.DescribedGroup(
        error_code=ErrorCode.none,
        group_id=GroupId(group.group_id),
        group_state=str(group.state),
        group_epoch=i32(group.group_epoch),
        assignment_epoch=i32(max(group.assignment_epoch, 0)),
        assignor_name=ASSIGNOR_NAME,
        members=tuple(
            describe.Member(
                member_id=m.member_id,
                rack_id=m.rack_id,
                member_epoch=i32(m.member_epoch),
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=tuple(TopicName(n) for n in m.subscribed_topic_names),
                assignment=assignment(m.assigned_partitions),
            )
            for m in group.members.values()
        ),
    )


def share_group_describe_response(
    group_ids: Iterable[str],
    table: ShareGroupTable,
    other_kind: Callable[[str], bool],
    topic_name: TopicNames,
    loading: bool,
) -> describe.ShareGroupDescribeResponse:
    """The groups a shard owns (the shell merges the shards' answers);
    ``other_kind``: whether a classic or consumer group has the id."""
    groups = []
    for group_id in group_ids:
        group = table.get(group_id)
        if loading:
            groups.append(described_error(group_id, ErrorCode.coordinator_load_in_progress, None))
        elif group is not None:
            groups.append(described_share_group(group, topic_name))
        elif other_kind(group_id):
            groups.append(
                described_error(
                    group_id,
                    ErrorCode.group_id_not_found,
                    f"Group {group_id} is not a share group.",
                )
            )
        else:
            groups.append(
                described_error(
                    group_id, ErrorCode.group_id_not_found, f"Group {group_id} not found."
                )
            )
    return describe.ShareGroupDescribeResponse(throttle_time=NO_THROTTLE, groups=tuple(groups))
