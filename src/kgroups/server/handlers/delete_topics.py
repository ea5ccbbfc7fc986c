"""DeleteTopics by name (and by id, v6)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from kio.schema.delete_topics.v6 import DeleteTopicsRequest, DeleteTopicsResponse
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.delete_topics.v6.response import DeletableTopicResult

from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import TopicName
from kgroups.server.handlers.common import NO_THROTTLE

if TYPE_CHECKING:
    from kgroups.server.broker import Broker
    from kgroups.server.context import RequestContext

_NO_ID = UUID(int=0)


async def handle(broker: Broker, ctx: RequestContext, request: object) -> DeleteTopicsResponse:
    if isinstance(request, DeleteTopicsRequest):
        states = request.topics
    else:  # v1-v5 name topics in a plain list
        names: tuple[str, ...] = getattr(request, "topic_names")  # noqa: B009
        states = tuple(DeleteTopicState(name=TopicName(n), topic_id=None) for n in names)
    results = []
    for state in states:
        name: str | None = state.name
        topic_id = state.topic_id if state.topic_id not in (None, _NO_ID) else None
        error, message = ErrorCode.none, None
        try:
            if name is None and topic_id is not None:
                found = broker.topics.by_id(topic_id)
                if found is None:
                    raise KafkaError(ErrorCode.unknown_topic_id, "Unknown topic id")
                name = found.name
            if name is None:
                raise KafkaError(ErrorCode.invalid_request, "Neither topic name nor id given")
            topic_id = broker.delete_topic(name).topic_id
        except KafkaError as e:
            error, message = e.error_code, e.message
        results.append(
            DeletableTopicResult(
                name=None if name is None else TopicName(name),
                topic_id=topic_id or _NO_ID,
                error_code=error,
                error_message=message,
            )
        )
    return DeleteTopicsResponse(throttle_time=NO_THROTTLE, responses=tuple(results))
