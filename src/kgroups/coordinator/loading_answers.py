"""What a coordinator answers while its partition loads, as Kafka 3.x's does:
one function per request (the shard asks them between ``begin_load`` and
``finish_load``)."""

from __future__ import annotations

from kio.schema.delete_groups.v2.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.describe_groups.v6.response import DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse
from kio.schema.leave_group.v5.response import LeaveGroupResponse
from kio.schema.offset_commit.v9.response import OffsetCommitResponse
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponse
from kio.schema.types import GroupId

from kgroups.coordinator.commit_request import CommitRequest
from kgroups.coordinator.consumer import HeartbeatAnswer
from kgroups.coordinator.consumer_messages import heartbeat_error
from kgroups.coordinator.offset_handlers import fetch_response, txn_commit_response
from kgroups.coordinator.offsets import TopicPartition
from kgroups.coordinator.responses import (
    NO_THROTTLE,
    heartbeat_response,
    join_error,
    leave_response,
    offset_commit_response,
    sync_response,
)
from kgroups.coordinator.views import described

LOADING = ErrorCode.coordinator_load_in_progress


def join_group(api_version: int, member_id: str) -> JoinGroupResponse:
    return join_error(api_version, LOADING, member_id)


def sync_group() -> SyncGroupResponse:
    # The rebalance in progress was lost with the old coordinator: rejoin.
    return sync_response(ErrorCode.rebalance_in_progress)


def heartbeat() -> HeartbeatResponse:
    return heartbeat_response(ErrorCode.none)


def leave_group(api_version: int) -> LeaveGroupResponse:
    return leave_response(api_version, LOADING)


def consumer_group_heartbeat() -> HeartbeatAnswer:
    return heartbeat_error(LOADING)


def offset_commit(req: CommitRequest) -> OffsetCommitResponse:
    return offset_commit_response(
        (TopicPartition(t.name, p.partition_index), LOADING)
        for t in req.topics
        for p in t.partitions
    )


def txn_offset_commit(req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    return txn_commit_response(req, LOADING, {})


def offset_fetch(group_id: str) -> OffsetFetchResponse:
    return fetch_response(group_id, (), LOADING)


def offset_delete() -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=LOADING, throttle_time=NO_THROTTLE, topics=())


def delete_groups(group_ids: tuple[GroupId, ...]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            DeletableGroupResult(group_id=g, error_code=LOADING) for g in dict.fromkeys(group_ids)
        ),
    )


def describe_groups(group_ids: tuple[GroupId, ...]) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(
        throttle_time=NO_THROTTLE, groups=tuple(described(g, LOADING) for g in group_ids)
    )
