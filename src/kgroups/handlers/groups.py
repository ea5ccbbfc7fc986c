"""Group APIs: routed to the shard that coordinates each group.

The coordinator speaks the newest schema of each API. Where an older version
has a different shape (LeaveGroup v0-v2 name one member, OffsetFetch v1-v7 one
group, OffsetCommit v2-v4 carry a retention time), protocol/versions.py
converts on the way in and out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.delete_groups.v2 import DeleteGroupsRequest, DeleteGroupsResponse
from kio.schema.delete_groups.v2.response import DeletableGroupResult
from kio.schema.describe_groups.v6 import DescribeGroupsRequest, DescribeGroupsResponse
from kio.schema.describe_groups.v6.response import DescribedGroup
from kio.schema.heartbeat.v4 import HeartbeatRequest, HeartbeatResponse
from kio.schema.join_group.v9 import JoinGroupRequest, JoinGroupResponse
from kio.schema.leave_group.v5 import LeaveGroupResponse
from kio.schema.list_groups.v5 import ListGroupsRequest, ListGroupsResponse
from kio.schema.list_groups.v5.response import ListedGroup
from kio.schema.offset_commit.v9 import OffsetCommitRequest, OffsetCommitResponse
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.schema.offset_delete.v0 import OffsetDeleteRequest, OffsetDeleteResponse
from kio.schema.offset_fetch.v9 import OffsetFetchResponse
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.offset_fetch.v9.response import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kio.schema.sync_group.v5 import SyncGroupRequest, SyncGroupResponse
from kio.schema.txn_offset_commit.v5 import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.coordinator.offset_handlers import txn_commit_response
from kgroups.coordinator.responses import join_error
from kgroups.coordinator.result import Result
from kgroups.coordinator.shard import GroupCoordinatorShard as Shard
from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.commit_partitions import merge_unknown, split_unknown
from kgroups.handlers.common import (
    NO_THROTTLE,
    OPERATIONS_OMITTED,
    with_every_group_operation,
)
from kgroups.handlers.share_group_state import delete_group_state
from kgroups.handlers.txn_commit_verification import verify_txn_commit
from kgroups.protocol import apis
from kgroups.protocol.types import GroupId, i32, i64
from kgroups.protocol.versions import (
    commit_retention_ms,
    leave_request,
    offset_fetch_groups,
    offset_fetch_response,
    upgrade,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

Request = TypeVar("Request")
# A shard method that takes one request: `Shard.heartbeat`, say.
ShardMethod = Callable[[Shard, Request, CoordinatorContext, int], Result]


def group_error_response(ctx: RequestContext, error: ErrorCode, request: Any) -> Any:
    """A whole-request error (coordinator loading, not coordinator, bad group id)."""
    api_key = ctx.api_key
    if api_key == apis.JOIN_GROUP:
        return join_error(ctx.api_version, error, request.member_id)
    if api_key == apis.SYNC_GROUP:
        return SyncGroupResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    if api_key == apis.HEARTBEAT:
        return HeartbeatResponse(throttle_time=NO_THROTTLE, error_code=error)
    if api_key == apis.LEAVE_GROUP:
        return LeaveGroupResponse(throttle_time=NO_THROTTLE, error_code=error, members=())
    if api_key == apis.OFFSET_COMMIT:
        return OffsetCommitResponse(
            throttle_time=NO_THROTTLE,
            topics=tuple(
                OffsetCommitResponseTopic(
                    name=t.name,
                    partitions=tuple(
                        OffsetCommitResponsePartition(
                            partition_index=p.partition_index, error_code=error
                        )
                        for p in t.partitions
                    ),
                )
                for t in request.topics
            ),
        )
    if api_key == apis.OFFSET_DELETE:
        return OffsetDeleteResponse(error_code=error, throttle_time=NO_THROTTLE, topics=())
    raise AssertionError(api_key)


async def _single(
    broker: BrokerApi, ctx: RequestContext, request: Request, method: ShardMethod[Request]
) -> Any:
    group_id: str = getattr(request, "group_id")  # noqa: B009 (every grouped request has one)
    if not group_id and ctx.api_key != apis.OFFSET_COMMIT:
        return group_error_response(ctx, ErrorCode.invalid_group_id, request)
    try:
        return await broker.coordinator.call(group_id, ctx, _bind(method, request))
    except KafkaError as e:
        return group_error_response(ctx, e.error_code, request)


async def join_group(
    broker: BrokerApi, ctx: RequestContext, request: JoinGroupRequest
) -> JoinGroupResponse:
    response: JoinGroupResponse = await _single(broker, ctx, request, Shard.join_group)
    return response


async def sync_group(
    broker: BrokerApi, ctx: RequestContext, request: SyncGroupRequest
) -> SyncGroupResponse:
    response: SyncGroupResponse = await _single(broker, ctx, request, Shard.sync_group)
    return response


async def heartbeat(
    broker: BrokerApi, ctx: RequestContext, request: HeartbeatRequest
) -> HeartbeatResponse:
    response: HeartbeatResponse = await _single(broker, ctx, request, Shard.heartbeat)
    return response


async def leave_group(broker: BrokerApi, ctx: RequestContext, request: Any) -> LeaveGroupResponse:
    newest = leave_request(ctx.api_version, request)
    response: LeaveGroupResponse = await _single(broker, ctx, newest, Shard.leave_group)
    return response


async def offset_commit(
    broker: BrokerApi, ctx: RequestContext, request: Any
) -> OffsetCommitResponse:
    retention_ms = commit_retention_ms(request)
    request = upgrade(request, OffsetCommitRequest)
    existing, unknown = await split_unknown(broker.topics, request)
    if unknown and not existing.topics:
        return merge_unknown(OffsetCommitResponse(throttle_time=NO_THROTTLE, topics=()), unknown)
    try:
        response: OffsetCommitResponse = await broker.coordinator.call(
            request.group_id,
            ctx,
            lambda shard, c, now: shard.offset_commit(existing, c, now, retention_ms),
        )
    except KafkaError as e:
        error_response: OffsetCommitResponse = group_error_response(ctx, e.error_code, request)
        return error_response
    broker.stats.offset_commits += sum(
        1 for t in response.topics for p in t.partitions if p.error_code == ErrorCode.none
    )
    return merge_unknown(response, unknown)


async def txn_offset_commit(
    broker: BrokerApi, ctx: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    """Offsets committed inside a transaction, pending until its marker."""
    if not request.group_id:
        return txn_commit_response(request, ErrorCode.invalid_group_id, {})
    refused = await verify_txn_commit(broker, request)
    if refused != ErrorCode.none:
        return txn_commit_response(request, refused, {})
    try:
        response: TxnOffsetCommitResponse = await broker.coordinator.call(
            request.group_id,
            ctx,
            lambda shard, c, now: shard.txn_offset_commit(request, c, now),
        )
    except KafkaError as e:
        return txn_commit_response(request, e.error_code, {})
    return response


async def offset_delete(
    broker: BrokerApi, ctx: RequestContext, request: OffsetDeleteRequest
) -> OffsetDeleteResponse:
    response: OffsetDeleteResponse = await _single(broker, ctx, request, Shard.offset_delete)
    return response


async def offset_fetch(broker: BrokerApi, ctx: RequestContext, request: Any) -> Any:
    groups = offset_fetch_groups(ctx.api_version, request)
    require_stable: bool = getattr(request, "require_stable", False)
    results = [await fetch_group_of(broker, ctx, g, require_stable) for g in groups]
    return offset_fetch_response(ctx.api_version, tuple(results))


async def fetch_group_of(
    broker: BrokerApi, ctx: RequestContext, group: OffsetFetchRequestGroup, require_stable: bool
) -> OffsetFetchResponseGroup:
    try:
        response: OffsetFetchResponse = await broker.coordinator.call(
            group.group_id,
            ctx,
            lambda shard, c, now: shard.offset_fetch(group, c, now, require_stable=require_stable),
        )
        return response.groups[0]
    except KafkaError as e:
        return OffsetFetchResponseGroup(
            group_id=group.group_id,
            topics=tuple(
                OffsetFetchResponseTopics(
                    name=t.name,
                    partitions=tuple(
                        OffsetFetchResponsePartitions(
                            partition_index=p,
                            committed_offset=i64(-1),
                            committed_leader_epoch=i32(-1),
                            metadata=None,
                            error_code=e.error_code,
                        )
                        for p in t.partition_indexes
                    ),
                )
                for t in group.topics or ()
            ),
            error_code=e.error_code,
        )


async def describe_groups(
    broker: BrokerApi, ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    described: dict[str, DescribedGroup] = {}
    for partition, group_ids in _by_partition(broker, request.groups).items():
        part = DescribeGroupsRequest(
            groups=tuple(GroupId(g) for g in group_ids),
            include_authorized_operations=request.include_authorized_operations,
        )
        try:
            response: DescribeGroupsResponse = await broker.coordinator.call_partition(
                partition, ctx, _bind(Shard.describe_groups, part)
            )
            described.update((g.group_id, g) for g in response.groups)
        except KafkaError as e:
            for g in group_ids:
                described[g] = DescribedGroup(
                    error_code=e.error_code,
                    group_id=GroupId(g),
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=(),
                    authorized_operations=OPERATIONS_OMITTED,
                )
    groups = tuple(described[g] for g in request.groups)
    return DescribeGroupsResponse(
        throttle_time=NO_THROTTLE,
        groups=with_every_group_operation(groups, request.include_authorized_operations),
    )


async def list_groups(
    broker: BrokerApi, ctx: RequestContext, request: ListGroupsRequest
) -> ListGroupsResponse:
    listed: list[ListedGroup] = []
    error = ErrorCode.none
    for partition in broker.coordinator.served_partitions():  # a loading one says so
        try:
            response: ListGroupsResponse = await broker.coordinator.call_partition(
                partition, ctx, lambda shard, c, now: shard.list_groups(request, c, now)
            )
        except KafkaError as e:  # its writes did not become durable in time
            error = e.error_code
            continue
        listed.extend(response.groups)
        if response.error_code != ErrorCode.none:
            error = response.error_code
    return ListGroupsResponse(throttle_time=NO_THROTTLE, error_code=error, groups=tuple(listed))


async def delete_groups(
    broker: BrokerApi, ctx: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    results: dict[str, ErrorCode] = {}
    for partition, group_ids in _by_partition(broker, request.groups_names).items():
        for g in list(group_ids):
            # A share group's share state goes first (Kafka 4.2's order).
            error = await delete_group_state(broker, ctx, g)
            if error is not ErrorCode.none:
                results[g] = error
                group_ids.remove(g)
        if not group_ids:
            continue
        part = DeleteGroupsRequest(groups_names=tuple(GroupId(g) for g in group_ids))
        try:
            response: DeleteGroupsResponse = await broker.coordinator.call_partition(
                partition, ctx, _bind(Shard.delete_groups, part)
            )
            results.update((r.group_id, r.error_code) for r in response.results)
        except KafkaError as e:
            results.update((g, e.error_code) for g in group_ids)
    if broker.share_partitions.forgotten:
        # A deleted share group's stored share partition state goes with it.
        await broker.share_state.persist_changes()
    return DeleteGroupsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            DeletableGroupResult(group_id=GroupId(g), error_code=error)
            for g, error in results.items()
        ),
    )


def _by_partition(broker: BrokerApi, group_ids: tuple[str, ...]) -> dict[int, list[str]]:
    """Group ids by the `__consumer_offsets` partition that coordinates them."""
    out: dict[int, list[str]] = {}
    for g in dict.fromkeys(group_ids):
        out.setdefault(broker.coordinator.partition_for(g), []).append(g)
    return out


def _bind(
    method: ShardMethod[Request], request: Request
) -> Callable[[Shard, CoordinatorContext, int], Result]:
    """A shard call with `request` fixed: `method(shard, request, ctx, now)`."""
    return lambda shard, c, now: method(shard, request, c, now)
