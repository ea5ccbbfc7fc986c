"""What every handler returns: records to append, then replies to send."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from kio.schema.delete_groups.v2.response import DeleteGroupsResponse
from kio.schema.describe_groups.v5.response import DescribeGroupsResponse
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse
from kio.schema.leave_group.v5.response import LeaveGroupResponse
from kio.schema.list_groups.v5.response import ListGroupsResponse
from kio.schema.offset_commit.v9.response import OffsetCommitResponse
from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.schema.sync_group.v5.response import SyncGroupResponse

from kgroups.coordinator.undo import Undo

Response: TypeAlias = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | OffsetDeleteResponse
    | DeleteGroupsResponse
)

Record: TypeAlias = tuple[bytes, bytes | None]


@dataclass(eq=False, slots=True)
class AppendToken:
    """Names one batch of records; the shell hands it back if appending fails.

    It carries what the coordinator needs to take the batch back, so nothing
    is kept inside the coordinator for batches that succeed: once the shell
    drops the token, it is gone.
    """

    batch_id: int
    undo: tuple[Undo, ...]
    # The batch's replies; those not tied to its records are still sent.
    replies: tuple[tuple[object, Response], ...] = ()


@dataclass(slots=True)
class Result:
    """Append ``records`` as one batch; once durable, send ``replies``.

    ``replies`` pairs the ``reply_to`` token of a request (not necessarily the
    current one: a completed rebalance answers parked JoinGroup and SyncGroup
    requests) with its response. If the append fails, the shell calls
    ``append_failed(append_token, ...)`` instead of sending these replies.
    """

    records: list[Record] = field(default_factory=list)
    replies: list[tuple[object, Response]] = field(default_factory=list)
    append_token: AppendToken | None = None
