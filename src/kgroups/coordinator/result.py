"""What every handler returns: records to append, then replies to send."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

if TYPE_CHECKING:
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
    from kio.schema.list_groups.v5.response import ListGroupsResponse
    from kio.schema.offset_commit.v9.response import OffsetCommitResponse
    from kio.schema.offset_delete.v0.response import OffsetDeleteResponse
    from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
    from kio.schema.share_group_describe.v1.response import ShareGroupDescribeResponse
    from kio.schema.share_group_heartbeat.v1.response import ShareGroupHeartbeatResponse
    from kio.schema.sync_group.v5.response import SyncGroupResponse
    from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponse

    from kgroups.coordinator.share.records import ShareStatePlan

# A string, so that the schemas load with the first response built, not with
# this module (which the broker imports at start).
Response: TypeAlias = """(
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
    | ConsumerGroupHeartbeatResponse
    | ConsumerGroupDescribeResponse
    | ShareGroupHeartbeatResponse
    | ShareGroupDescribeResponse
    | AlterShareGroupOffsetsResponse
    | DeleteShareGroupOffsetsResponse
    | TxnOffsetCommitResponse
    | ShareStatePlan
    | ErrorCode
)"""  # ErrorCode: a transaction marker's outcome

Record: TypeAlias = tuple[bytes, bytes | None]


@dataclass(eq=False, slots=True)
class AppendToken:
    """Names one batch of records. The shell hands it back with
    ``append_durable`` once the batch is durable (the shard forgets how to
    take it back) or with ``append_failed`` if it was not stored.
    """

    batch_id: int
    # The batch's replies, answered with the error if the batch fails late.
    replies: tuple[tuple[object, Response], ...] = ()


class EndMarker(NamedTuple):
    """How a producer's transaction ends: commit or abort, as decided by the
    transaction coordinator of ``coordinator_epoch``."""

    commit: bool
    coordinator_epoch: int


class ProducerBatch(NamedTuple):
    """Records written for a producer's transaction, in a batch of their own:
    its offsets, or (``marker`` set) the marker that ends it. The partition's
    log writes a marker itself, as on any partition, so that its producer
    state, aborted transactions and last stable offset follow."""

    producer_id: int
    producer_epoch: int
    marker: EndMarker | None = None


@dataclass(slots=True)
class Result:
    """Append ``records`` as one batch; once durable, send ``replies``.

    ``replies`` pairs the ``reply_to`` token of a request (not necessarily the
    current one: a completed rebalance answers parked JoinGroup and SyncGroup
    requests) with its response. Once the records are durable the shell calls
    ``append_durable(append_token)``; if the append fails it calls
    ``append_failed(append_token, ...)`` and sends that result's replies.
    """

    records: list[Record] = field(default_factory=list)
    replies: list[tuple[object, Response]] = field(default_factory=list)
    append_token: AppendToken | None = None
    # Set for transactional records, which go in a batch of their own.
    producer: ProducerBatch | None = None
