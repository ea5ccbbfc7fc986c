"""Guards of the share group APIs (KIP-932), with Kafka's checks: Group READ
to heartbeat, fetch, acknowledge and alter start offsets, Group DESCRIBE to
describe, Group DELETE to delete start offsets, Topic DESCRIBE of the topics
a member subscribes to, Topic READ of those it fetches from, acknowledges or
sets (a denied topic answers TOPIC_AUTHORIZATION_FAILED, the others are
served)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from kio.schema.alter_share_group_offsets.v0 import AlterShareGroupOffsetsRequest
from kio.schema.alter_share_group_offsets.v0.response import (
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from kio.schema.delete_share_group_offsets.v0.response import DeleteShareGroupOffsetsResponseTopic
from kio.schema.share_acknowledge.v2.response import (
    LeaderIdAndEpoch as AckLeader,
)
from kio.schema.share_acknowledge.v2.response import (
    PartitionData as AckPartition,
)
from kio.schema.share_acknowledge.v2.response import (
    ShareAcknowledgeTopicResponse,
)
from kio.schema.share_fetch.v2.response import (
    LeaderIdAndEpoch,
    PartitionData,
    ShareFetchableTopicResponse,
)
from kio.static.primitive import Records, i16

from kgroups.coordinator.share.messages import share_heartbeat_error, share_heartbeat_response
from kgroups.errors import ErrorCode
from kgroups.handlers.access.checks import GROUP, TOPIC, Guard, Handler, allowed, serve_allowed
from kgroups.handlers.access.groups import described_groups
from kgroups.handlers.share_acknowledge import acknowledge_error
from kgroups.handlers.share_fetch import fetch_error
from kgroups.protocol.types import i32
from kgroups.security.authorizer import Authorizer, Operation

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_DENIED = ErrorCode.topic_authorization_failed
_NO_LEADER = i32(-1)


async def share_heartbeat(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
        return share_heartbeat_response(share_heartbeat_error(ErrorCode.group_authorization_failed))
    hidden = sorted(
        t
        for t in body.subscribed_topic_names or ()
        if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t)
    )
    if hidden:
        message = f"The group is not authorized to describe topics {hidden}"
        return share_heartbeat_response(share_heartbeat_error(_DENIED, message))
    return await handler(broker, ctx, body)


async def share_group_describe(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    return described_groups(az, ctx, body, await handler(broker, ctx, body))


def _denied_topics(az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any) -> list[Any]:
    def readable(topic_id: object) -> bool:
        topic = None if topic_id is None else broker.topics.by_id(topic_id)  # type: ignore[arg-type]
        # An unknown topic id is answered by the handler (UNKNOWN_TOPIC_ID).
        return topic is None or allowed(az, ctx, Operation.READ, TOPIC, topic.name)

    return [t for t in body.topics if not readable(t.topic_id)]


async def share_fetch(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id or ""):
        return fetch_error(ErrorCode.group_authorization_failed)
    denied = _denied_topics(az, broker, ctx, body)
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "responses", _fetch_refused
    )


async def share_acknowledge(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id or ""):
        return acknowledge_error(ErrorCode.group_authorization_failed)
    denied = _denied_topics(az, broker, ctx, body)
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "responses", _ack_refused
    )


def _fetch_refused(denied: Sequence[Any]) -> tuple[ShareFetchableTopicResponse, ...]:
    return tuple(
        ShareFetchableTopicResponse(
            topic_id=t.topic_id,
            partitions=tuple(
                PartitionData(
                    partition_index=p.partition_index,
                    error_code=_DENIED,
                    acknowledge_error_code=i16(_DENIED.value),
                    current_leader=LeaderIdAndEpoch(leader_id=_NO_LEADER, leader_epoch=_NO_LEADER),
                    records=cast(Records, b""),
                    acquired_records=(),
                )
                for p in t.partitions
            ),
        )
        for t in denied
    )


def _ack_refused(denied: Sequence[Any]) -> tuple[ShareAcknowledgeTopicResponse, ...]:
    return tuple(
        ShareAcknowledgeTopicResponse(
            topic_id=t.topic_id,
            partitions=tuple(
                AckPartition(
                    partition_index=p.partition_index,
                    error_code=_DENIED,
                    current_leader=AckLeader(leader_id=_NO_LEADER, leader_epoch=_NO_LEADER),
                )
                for p in t.partitions
            ),
        )
        for t in denied
    )


async def describe_share_group_offsets(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """Group DESCRIBE per group (GROUP_AUTHORIZATION_FAILED for the others);
    the topics without Topic DESCRIBE are left out of an all-topics answer."""
    response: Any = await handler(broker, ctx, body)
    groups = []
    for g in response.groups:
        if not allowed(az, ctx, Operation.DESCRIBE, GROUP, g.group_id):
            g = replace(g, error_code=ErrorCode.group_authorization_failed, topics=())
        else:
            g = replace(
                g,
                topics=tuple(
                    t for t in g.topics if allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.topic_name)
                ),
            )
        groups.append(g)
    return replace(response, groups=tuple(groups))


def share_offsets_change_guard(op: Operation) -> Guard:
    """AlterShareGroupOffsets (Group READ) and DeleteShareGroupOffsets (Group
    DELETE): the whole request refused with GROUP_AUTHORIZATION_FAILED; a
    topic without Topic READ answers TOPIC_AUTHORIZATION_FAILED, untouched."""

    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, GROUP, body.group_id):
            response: Any = await handler(broker, ctx, replace(body, group_id="", topics=()))
            return replace(response, error_code=ErrorCode.group_authorization_failed)
        denied = [
            t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.topic_name)
        ]
        return await serve_allowed(
            broker, ctx, body, handler, "topics", denied, "responses", _offsets_refused(body)
        )

    return guard


def _offsets_refused(body: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    if isinstance(body, AlterShareGroupOffsetsRequest):
        return lambda denied: tuple(
            AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name,
                topic_id=None,
                partitions=tuple(
                    AlterShareGroupOffsetsResponsePartition(
                        partition_index=p.partition_index, error_code=_DENIED
                    )
                    for p in t.partitions
                ),
            )
            for t in denied
        )
    return lambda denied: tuple(
        DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=None, error_code=_DENIED
        )
        for t in denied
    )
