"""What a request is answered instead when the state its answer showed was
taken back because a batch could not be stored."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from kio.schema.alter_share_group_offsets.v0.response import AlterShareGroupOffsetsResponse
from kio.schema.consumer_group_describe.v1.response import ConsumerGroupDescribeResponse
from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse
from kio.schema.delete_groups.v2.response import DeleteGroupsResponse
from kio.schema.delete_share_group_offsets.v0.response import DeleteShareGroupOffsetsResponse
from kio.schema.describe_groups.v6.response import DescribeGroupsResponse
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse
from kio.schema.leave_group.v5.response import LeaveGroupResponse
from kio.schema.offset_commit.v9.response import OffsetCommitResponse
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.schema.share_group_describe.v1.response import ShareGroupDescribeResponse
from kio.schema.share_group_heartbeat.v1.response import ShareGroupHeartbeatResponse
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponse

from kgroups.coordinator.append_errors import (
    deletion_append_error,
    group_metadata_append_error,
    offset_commit_append_error,
    retriable_append_error,
)
from kgroups.coordinator.responses import UNKNOWN_MEMBER_ID, heartbeat_response, sync_response
from kgroups.coordinator.result import Response
from kgroups.coordinator.views import described

# Both commit responses, one shape: topics of partitions, each with its error.
_CommitResponse = TypeVar("_CommitResponse", OffsetCommitResponse, TxnOffsetCommitResponse)


def failed_response(response: Response, error: ErrorCode) -> Response:
    """``response`` with the client's error for the storage ``error``.

    Parts of a response that already carried their own error (a partition
    that does not exist, a group that was not found) keep it.
    """
    if isinstance(response, OffsetCommitResponse):
        return _commit_failed(response, error)
    if isinstance(response, TxnOffsetCommitResponse):
        return _commit_failed(response, error)
    if isinstance(response, ErrorCode):
        return error  # a transaction marker: the append's own error
    if isinstance(response, JoinGroupResponse):
        return dataclasses.replace(
            response,
            error_code=group_metadata_append_error(error),
            member_id=UNKNOWN_MEMBER_ID,
            skip_assignment=False,
            members=(),
        )
    if isinstance(response, SyncGroupResponse):
        return sync_response(group_metadata_append_error(error))
    if isinstance(response, OffsetDeleteResponse):
        return dataclasses.replace(response, error_code=deletion_append_error(error), topics=())
    if isinstance(response, DeleteGroupsResponse):
        deletion_error = deletion_append_error(error)
        return dataclasses.replace(
            response,
            results=tuple(
                dataclasses.replace(r, error_code=deletion_error)
                if r.error_code is ErrorCode.none
                else r
                for r in response.results
            ),
        )
    retriable = retriable_append_error(error)
    if isinstance(response, HeartbeatResponse):
        return heartbeat_response(retriable)
    if isinstance(response, (AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse)):
        return dataclasses.replace(response, error_code=retriable, error_message=None)
    if isinstance(response, ShareGroupHeartbeatResponse):
        return dataclasses.replace(
            response, error_code=retriable, error_message=None, assignment=None
        )
    if isinstance(response, ShareGroupDescribeResponse):
        return dataclasses.replace(
            response,
            groups=tuple(
                dataclasses.replace(g, error_code=retriable, members=()) for g in response.groups
            ),
        )
    if isinstance(response, ConsumerGroupHeartbeatResponse):
        # The member keeps its epoch and retries.
        return dataclasses.replace(
            response, error_code=retriable, error_message=None, assignment=None
        )
    if isinstance(response, ConsumerGroupDescribeResponse):
        return dataclasses.replace(
            response,
            groups=tuple(
                dataclasses.replace(g, error_code=retriable, members=()) for g in response.groups
            ),
        )
    if isinstance(response, LeaveGroupResponse):
        return dataclasses.replace(response, error_code=retriable, members=())
    if isinstance(response, OffsetFetchResponse):
        return dataclasses.replace(
            response,
            groups=tuple(
                dataclasses.replace(g, error_code=retriable, topics=()) for g in response.groups
            ),
        )
    if isinstance(response, DescribeGroupsResponse):
        return dataclasses.replace(
            response, groups=tuple(described(g.group_id, retriable) for g in response.groups)
        )
    return response  # ListGroups: not about any one group


def _commit_failed(response: _CommitResponse, error: ErrorCode) -> _CommitResponse:
    """Each partition stored without error answers the commit's append error."""
    commit_error = offset_commit_append_error(error)
    return dataclasses.replace(
        response,
        topics=tuple(
            dataclasses.replace(
                topic,
                partitions=tuple(
                    dataclasses.replace(p, error_code=commit_error)
                    if p.error_code is ErrorCode.none
                    else p
                    for p in topic.partitions
                ),
            )
            for topic in response.topics
        ),
    )
