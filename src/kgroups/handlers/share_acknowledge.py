"""ShareAcknowledge (KIP-932): a member's acknowledgements without a fetch.

It goes on the member's share session: epoch 0 is INVALID_SHARE_SESSION_EPOCH
(a session is opened by a ShareFetch), N > 0 must be the session's expected
epoch and moves it on, -1 acknowledges and then closes the session, the
member's remaining acquired records released. RENEW (KIP-1222, v2) is taken
when the request says ``is_renew_ack``.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import TYPE_CHECKING

from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from kio.schema.share_acknowledge.v2.response import (
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
    ShareAcknowledgeTopicResponse,
)
from kio.static.primitive import i32, i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.share_acks import acknowledge
from kgroups.handlers.share_groups import share_protocol_enabled
from kgroups.handlers.share_leaders import MOVED, current_leader, endpoints
from kgroups.protocol.types import BrokerId
from kgroups.share_partitions.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SessionError,
    valid_member_id,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


def acknowledge_error(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout=i32Timedelta.parse(datetime.timedelta(0)),
        responses=(),
        node_endpoints=(),
    )


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ShareAcknowledgeRequest
) -> ShareAcknowledgeResponse:
    if not share_protocol_enabled(broker):
        return acknowledge_error(ErrorCode.unsupported_version, "Share groups are not enabled.")
    group_id = request.group_id or ""
    member_id = request.member_id or ""
    if not group_id.strip():
        return acknowledge_error(ErrorCode.invalid_request, "GroupId can't be empty.")
    if not valid_member_id(member_id):
        return acknowledge_error(ErrorCode.invalid_request, "Invalid member id in the request.")
    epoch = int(request.share_session_epoch)
    sessions = broker.share_partitions.sessions
    if epoch == INITIAL_EPOCH:
        return acknowledge_error(
            ErrorCode.invalid_share_session_epoch,
            "A share session is opened by a ShareFetch, not by a ShareAcknowledge.",
        )
    try:
        session = sessions.use(group_id, member_id, epoch)
    except SessionError as e:
        return acknowledge_error(e.code, str(e))
    session.connection = ctx.connection
    await broker.share_state.ensure_loaded(
        [
            (group_id, t.topic_id, int(p.partition_index))
            for t in request.topics
            if t.topic_id is not None
            for p in t.partitions
        ]
    )
    now = broker.clock.now_ms()
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            error = (
                ErrorCode.unknown_topic_id
                if topic.topic_id is None
                else acknowledge(
                    broker,
                    group_id,
                    member_id,
                    topic.topic_id,
                    int(p.partition_index),
                    p.acknowledgement_batches,
                    request.is_renew_ack,
                    now,
                )
            )
            partitions.append(
                PartitionData(
                    partition_index=p.partition_index,
                    error_code=error,
                    current_leader=_leader(broker, topic.topic_id, int(p.partition_index)),
                )
            )
        topics.append(
            ShareAcknowledgeTopicResponse(topic_id=topic.topic_id, partitions=tuple(partitions))
        )
    if epoch == FINAL_EPOCH:
        broker.share_partitions.release_member(group_id, member_id)
    else:
        session.advance()
    # Acknowledgements are answered once they would survive a restart.
    if epoch == FINAL_EPOCH:
        touched = [key for key, _sp in broker.share_partitions.of_group(group_id)]
    else:
        touched = [
            (group_id, t.topic_id, int(p.partition_index))
            for t in request.topics
            if t.topic_id is not None
            for p in t.partitions
        ]
    stored = await broker.share_state.persist_changes(touched)
    if stored is not ErrorCode.none:
        topics = [
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, error_code=stored)
                    if p.error_code is ErrorCode.none
                    else p
                    for p in t.partitions
                ),
            )
            for t in topics
        ]
    lock_ms = broker.share_partitions.config.record_lock_duration_ms
    return ShareAcknowledgeResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        acquisition_lock_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=lock_ms)),
        responses=tuple(topics),
        node_endpoints=_endpoints(broker, ctx.listener, topics),
    )


def _leader(broker: BrokerApi, topic_id: uuid.UUID | None, partition: int) -> LeaderIdAndEpoch:
    leader, epoch = current_leader(broker, topic_id, partition)
    return LeaderIdAndEpoch(leader_id=i32(leader), leader_epoch=i32(epoch))


def _endpoints(
    broker: BrokerApi, listener: str, topics: list[ShareAcknowledgeTopicResponse]
) -> tuple[NodeEndpoint, ...]:
    moved = [
        int(p.current_leader.leader_id)
        for t in topics
        for p in t.partitions
        if p.error_code in MOVED
    ]
    return tuple(
        NodeEndpoint(node_id=BrokerId(node), host=host, port=i32(port))
        for node, host, port in endpoints(broker, listener, moved)
    )
