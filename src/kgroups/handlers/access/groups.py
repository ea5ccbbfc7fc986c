"""Guards of the group APIs: membership, offsets, listing and describing groups,
finding coordinators."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kio.schema.delete_groups.v2.response import DeletableGroupResult
from kio.schema.find_coordinator.v3 import FindCoordinatorResponse as FindCoordinatorResponseV3
from kio.schema.find_coordinator.v4.response import Coordinator
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kio.schema.offset_fetch.v9.response import OffsetFetchResponseGroup

from kgroups.coordinator.consumer_messages import consumer_heartbeat_response, heartbeat_error
from kgroups.errors import ErrorCode
from kgroups.handlers.access.checks import (
    CLUSTER,
    GROUP,
    TOPIC,
    TXN,
    TXN_DENIED,
    Guard,
    Handler,
    allowed,
    serve_allowed,
)
from kgroups.handlers.access.refusals import partitions_refused
from kgroups.handlers.common import NO_THROTTLE, OPERATIONS_OMITTED
from kgroups.handlers.groups import fetch_group_of, group_error_response
from kgroups.protocol.types import BrokerId, i32, i64
from kgroups.protocol.versions import offset_fetch_groups, offset_fetch_response
from kgroups.security.authorizer import CLUSTER_NAME, Authorizer, Operation

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


def group_guard(op: Operation) -> Guard:
    """One group, whole request denied (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""

    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, GROUP, body.group_id):
            return group_error_response(ctx, ErrorCode.group_authorization_failed, body)
        return await handler(broker, ctx, body)

    return guard


def group_topics_guard(
    op: Operation, refused: Callable[[RequestContext, Any], tuple[Any, ...]]
) -> Guard:
    """Group ``op`` for the whole request, then Topic READ per topic
    (OffsetCommit, OffsetDelete): the denied topics are answered
    ``refused(ctx, the request cut down to them)``, the others served."""

    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, GROUP, body.group_id):
            return group_error_response(ctx, ErrorCode.group_authorization_failed, body)
        denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.name)]

        def refuse(denied: Sequence[Any]) -> tuple[Any, ...]:
            return refused(ctx, dataclasses.replace(body, topics=tuple(denied)))

        return await serve_allowed(broker, ctx, body, handler, "topics", denied, "topics", refuse)

    return guard


offset_commit = group_topics_guard(
    Operation.READ,
    lambda ctx, denied: (
        group_error_response(ctx, ErrorCode.topic_authorization_failed, denied).topics
    ),
)


async def list_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    if allowed(az, ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return response
    groups = tuple(
        g for g in response.groups if allowed(az, ctx, Operation.DESCRIBE, GROUP, g.group_id)
    )
    return dataclasses.replace(response, groups=groups)


def described_groups(
    az: Authorizer, ctx: RequestContext, body: Any, response: Any, **emptied: str
) -> object:
    """A describe answer with the groups the caller may not describe emptied
    (their state and every field in ``emptied``) and refused, and the
    operations of the others answered without error, when asked for."""
    groups = []
    for g in response.groups:
        if not allowed(az, ctx, Operation.DESCRIBE, GROUP, g.group_id):
            g = dataclasses.replace(
                g,
                error_code=ErrorCode.group_authorization_failed,
                group_state="",
                members=(),
                authorized_operations=OPERATIONS_OMITTED,
                **emptied,
            )
        elif body.include_authorized_operations and g.error_code == ErrorCode.none:
            bits = az.authorized_operations(ctx.principal, ctx.client_host, GROUP, g.group_id)
            g = dataclasses.replace(g, authorized_operations=i32(bits))
        groups.append(g)
    return dataclasses.replace(response, groups=tuple(groups))


async def describe_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    return described_groups(az, ctx, body, response, protocol_type="", protocol_data="")


async def delete_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    names = body.groups_names
    denied = [g for g in names if not allowed(az, ctx, Operation.DELETE, GROUP, g)]
    return await serve_allowed(
        broker, ctx, body, handler, "groups_names", denied, "results", _groups_refused
    )


def _groups_refused(denied: Sequence[Any]) -> tuple[DeletableGroupResult, ...]:
    return tuple(
        DeletableGroupResult(group_id=g, error_code=ErrorCode.group_authorization_failed)
        for g in denied
    )


_offset_delete_refused = partitions_refused(
    OffsetDeleteResponseTopic, OffsetDeleteResponsePartition
)
offset_delete = group_topics_guard(
    Operation.DELETE, lambda ctx, denied: _offset_delete_refused(denied.topics)
)


_KEY_TYPES = {0: (GROUP, ErrorCode.group_authorization_failed), 1: (TXN, TXN_DENIED)}


async def find_coordinator(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """Group DESCRIBE or TransactionalId DESCRIBE, checked before the
    coordinator's topic is created."""
    key_type = getattr(body, "key_type", 0)
    if key_type not in _KEY_TYPES:
        return await handler(broker, ctx, body)
    rtype, error = _KEY_TYPES[key_type]
    if not hasattr(body, "coordinator_keys"):  # v0-v3: one key
        if allowed(az, ctx, Operation.DESCRIBE, rtype, body.key):
            return await handler(broker, ctx, body)
        return FindCoordinatorResponseV3(
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=None,
            node_id=BrokerId(-1),
            host="",
            port=i32(-1),
        )
    keys = body.coordinator_keys
    denied = [k for k in keys if not allowed(az, ctx, Operation.DESCRIBE, rtype, k)]

    def refuse(denied: Sequence[str]) -> tuple[Coordinator, ...]:
        return tuple(
            Coordinator(
                key=k,
                node_id=BrokerId(-1),
                host="",
                port=i32(-1),
                error_code=error,
                error_message=None,
            )
            for k in denied
        )

    return await serve_allowed(
        broker, ctx, body, handler, "coordinator_keys", denied, "coordinators", refuse
    )


async def consumer_heartbeat(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
        return consumer_heartbeat_response(heartbeat_error(ErrorCode.group_authorization_failed))
    hidden = sorted(
        t
        for t in body.subscribed_topic_names or ()
        if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t)
    )
    if hidden:
        message = f"The group is not authorized to describe topics {hidden}"
        return consumer_heartbeat_response(
            heartbeat_error(ErrorCode.topic_authorization_failed, message)
        )
    return await handler(broker, ctx, body)


async def consumer_group_describe(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    return described_groups(az, ctx, body, await handler(broker, ctx, body))


async def offset_fetch(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """Group DESCRIBE per group; a topic without DESCRIBE is left out of an
    all-topics answer and refused where named."""
    require_stable: bool = getattr(body, "require_stable", False)
    results = []
    for g in offset_fetch_groups(ctx.api_version, body):
        if not allowed(az, ctx, Operation.DESCRIBE, GROUP, g.group_id):
            results.append(
                OffsetFetchResponseGroup(
                    group_id=g.group_id, topics=(), error_code=ErrorCode.group_authorization_failed
                )
            )
            continue
        fetched = await fetch_group_of(broker, ctx, g, require_stable)
        topics = []
        for t in fetched.topics:
            if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.name):
                if g.topics is None:
                    continue
                t = dataclasses.replace(
                    t,
                    partitions=tuple(
                        dataclasses.replace(
                            p,
                            committed_offset=i64(-1),
                            metadata=None,
                            error_code=ErrorCode.topic_authorization_failed,
                        )
                        for p in t.partitions
                    ),
                )
            topics.append(t)
        results.append(dataclasses.replace(fetched, topics=tuple(topics)))
    return offset_fetch_response(ctx.api_version, tuple(results))
