"""The share coordinator's APIs (KIP-932): InitializeShareGroupState,
ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary, at the versions Kafka 4.2 serves.

They are broker-to-broker APIs: share-partition leaders and the group
coordinator send them to the coordinator of a share partition's state, the
leader of its key's ``__share_group_state`` partition. As Kafka's
ShareCoordinatorService, a request is split into its keys, each served by
its shard, and the answers put together again: a key whose partition is not
held here is NOT_COORDINATOR, one still loading COORDINATOR_LOAD_IN_PROGRESS.
With an authorizer the caller needs CLUSTER_ACTION on the cluster, else each
partition is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from kio.schema.delete_share_group_state.v0 import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
)
from kio.schema.delete_share_group_state.v0 import response as delete_wire
from kio.schema.initialize_share_group_state.v0 import (
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
)
from kio.schema.initialize_share_group_state.v0 import response as init_wire
from kio.schema.read_share_group_state.v0 import (
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
)
from kio.schema.read_share_group_state.v0 import response as read_wire
from kio.schema.read_share_group_state_summary.v1 import (
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
)
from kio.schema.read_share_group_state_summary.v1 import response as summary_wire
from kio.schema.write_share_group_state.v1 import (
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from kio.schema.write_share_group_state.v1 import response as write_wire
from kio.static.primitive import i8, i16, i32, i64

from kgroups.errors import ErrorCode
from kgroups.share_coordinator.answers import NULL_TOPIC_ID, KeyAnswer, refused
from kgroups.share_partitions.state_records import StateBatch

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

GROUP_ID_REQUIRED = "Group id must be non-empty and non-null."
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."

# Per (topic id, partition) of the request, in its order: the answer.
Answers = dict[tuple[uuid.UUID | None, int], KeyAnswer]


async def _serve(
    group_id: str,
    items: Sequence[tuple[uuid.UUID | None, int, Any]],
    serve: Callable[[tuple[str, uuid.UUID, int], Any], Awaitable[KeyAnswer]],
) -> Answers:
    """Each key served on its own, all at once."""
    answers: Answers = {}
    waiting: list[tuple[tuple[uuid.UUID | None, int], Awaitable[KeyAnswer]]] = []
    for topic_id, partition, data in items:
        if topic_id is None:
            answers[(topic_id, partition)] = refused(ErrorCode.invalid_request, NULL_TOPIC_ID)
            continue
        answers[(topic_id, partition)] = KeyAnswer()  # keeps the request's order
        waiting.append(((topic_id, partition), serve((group_id, topic_id, partition), data)))
    results = await asyncio.gather(*(w for _k, w in waiting))
    for (where, _w), answer in zip(waiting, results, strict=True):
        answers[where] = answer
    return answers


def _by_topic(answers: Answers) -> dict[uuid.UUID | None, list[tuple[int, KeyAnswer]]]:
    topics: dict[uuid.UUID | None, list[tuple[int, KeyAnswer]]] = {}
    for (topic_id, partition), answer in answers.items():
        topics.setdefault(topic_id, []).append((partition, answer))
    return topics


def _items(request: Any) -> list[tuple[uuid.UUID | None, int, Any]]:
    return [(t.topic_id, int(p.partition), p) for t in request.topics for p in t.partitions]


def everywhere(request: Any, answer: KeyAnswer) -> Answers:
    """The same answer for every partition of the request."""
    return {(t, p): answer for t, p, _d in _items(request)}


# -- WriteShareGroupState ---------------------------------------------------------


async def write(
    broker: BrokerApi, ctx: RequestContext, request: WriteShareGroupStateRequest
) -> WriteShareGroupStateResponse:
    runtime = broker.share_coordinator
    if not request.group_id:
        return write_response(
            everywhere(request, refused(ErrorCode.invalid_request, GROUP_ID_REQUIRED))
        )

    async def serve(key: tuple[str, uuid.UUID, int], p: Any) -> KeyAnswer:
        batches = tuple(
            StateBatch(
                int(b.first_offset),
                int(b.last_offset),
                int(b.delivery_state),
                int(b.delivery_count),
            )
            for b in p.state_batches
        )
        return await runtime.call(
            key,
            ctx,
            lambda shard, c, now: shard.write(
                key, int(p.state_epoch), int(p.leader_epoch), int(p.start_offset), batches, c, now
            ),
        )

    return write_response(await _serve(request.group_id, _items(request), serve))


def write_response(answers: Answers) -> WriteShareGroupStateResponse:
    return WriteShareGroupStateResponse(
        results=tuple(
            write_wire.WriteStateResult(
                topic_id=topic_id,
                partitions=tuple(
                    write_wire.PartitionResult(
                        partition=i32(p), error_code=a.error, error_message=a.message
                    )
                    for p, a in parts
                ),
            )
            for topic_id, parts in _by_topic(answers).items()
        )
    )


# -- ReadShareGroupState ----------------------------------------------------------


async def read(
    broker: BrokerApi, ctx: RequestContext, request: ReadShareGroupStateRequest
) -> ReadShareGroupStateResponse:
    runtime = broker.share_coordinator
    if not request.group_id:
        return ReadShareGroupStateResponse(results=())

    async def serve(key: tuple[str, uuid.UUID, int], p: Any) -> KeyAnswer:
        return await runtime.call(
            key, ctx, lambda shard, c, now: shard.read(key, int(p.leader_epoch), c, now)
        )

    return read_response(await _serve(request.group_id, _items(request), serve))


def read_response(answers: Answers) -> ReadShareGroupStateResponse:
    return ReadShareGroupStateResponse(
        results=tuple(
            read_wire.ReadStateResult(
                topic_id=topic_id,
                partitions=tuple(
                    read_wire.PartitionResult(
                        partition=i32(p),
                        error_code=a.error,
                        error_message=a.message,
                        state_epoch=i32(a.state_epoch),
                        start_offset=i64(a.start_offset),
                        state_batches=tuple(
                            read_wire.StateBatch(
                                first_offset=i64(b.first_offset),
                                last_offset=i64(b.last_offset),
                                delivery_state=i8(b.delivery_state),
                                delivery_count=i16(b.delivery_count),
                            )
                            for b in a.state_batches
                        ),
                    )
                    for p, a in parts
                ),
            )
            for topic_id, parts in _by_topic(answers).items()
        )
    )


# -- InitializeShareGroupState ----------------------------------------------------


async def initialize(
    broker: BrokerApi, ctx: RequestContext, request: InitializeShareGroupStateRequest
) -> InitializeShareGroupStateResponse:
    runtime = broker.share_coordinator
    if not request.group_id:
        return initialize_response(
            everywhere(request, refused(ErrorCode.invalid_request, GROUP_ID_REQUIRED))
        )

    async def serve(key: tuple[str, uuid.UUID, int], p: Any) -> KeyAnswer:
        return await runtime.call(
            key,
            ctx,
            lambda shard, c, now: shard.initialize(
                key, int(p.state_epoch), int(p.start_offset), c, now
            ),
        )

    return initialize_response(await _serve(request.group_id, _items(request), serve))


def initialize_response(answers: Answers) -> InitializeShareGroupStateResponse:
    return InitializeShareGroupStateResponse(
        results=tuple(
            init_wire.InitializeStateResult(
                topic_id=topic_id,
                partitions=tuple(
                    init_wire.PartitionResult(
                        partition=i32(p), error_code=a.error, error_message=a.message
                    )
                    for p, a in parts
                ),
            )
            for topic_id, parts in _by_topic(answers).items()
        )
    )


# -- DeleteShareGroupState --------------------------------------------------------


async def delete(
    broker: BrokerApi, ctx: RequestContext, request: DeleteShareGroupStateRequest
) -> DeleteShareGroupStateResponse:
    runtime = broker.share_coordinator
    if not request.group_id:
        return delete_response(
            everywhere(request, refused(ErrorCode.invalid_request, GROUP_ID_REQUIRED))
        )

    async def serve(key: tuple[str, uuid.UUID, int], _p: Any) -> KeyAnswer:
        return await runtime.call(key, ctx, lambda shard, c, now: shard.delete(key, c, now))

    return delete_response(await _serve(request.group_id, _items(request), serve))


def delete_response(answers: Answers) -> DeleteShareGroupStateResponse:
    return DeleteShareGroupStateResponse(
        results=tuple(
            delete_wire.DeleteStateResult(
                topic_id=topic_id,
                partitions=tuple(
                    delete_wire.PartitionResult(
                        partition=i32(p), error_code=a.error, error_message=a.message
                    )
                    for p, a in parts
                ),
            )
            for topic_id, parts in _by_topic(answers).items()
        )
    )


# -- ReadShareGroupStateSummary ---------------------------------------------------


async def summary(
    broker: BrokerApi, ctx: RequestContext, request: ReadShareGroupStateSummaryRequest
) -> ReadShareGroupStateSummaryResponse:
    runtime = broker.share_coordinator
    if not request.group_id:
        return ReadShareGroupStateSummaryResponse(results=())

    async def serve(key: tuple[str, uuid.UUID, int], _p: Any) -> KeyAnswer:
        return await runtime.call(key, ctx, lambda shard, c, now: shard.summary(key, c, now))

    return summary_response(await _serve(request.group_id, _items(request), serve))


def summary_response(answers: Answers) -> ReadShareGroupStateSummaryResponse:
    return ReadShareGroupStateSummaryResponse(
        results=tuple(
            summary_wire.ReadStateSummaryResult(
                topic_id=topic_id,
                partitions=tuple(
                    summary_wire.PartitionResult(
                        partition=i32(p),
                        error_code=a.error,
                        error_message=a.message,
                        state_epoch=i32(a.state_epoch),
                        leader_epoch=i32(a.leader_epoch),
                        start_offset=i64(a.start_offset),
                        delivery_complete_count=i32(a.delivery_complete_count),
                    )
                    for p, a in parts
                ),
            )
            for topic_id, parts in _by_topic(answers).items()
        )
    )
