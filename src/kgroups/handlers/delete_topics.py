"""DeleteTopics by name (and by id, v6)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from kio.schema.delete_topics.v6 import DeleteTopicsRequest, DeleteTopicsResponse
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.delete_topics.v6.response import DeletableTopicResult

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.topic_changes import delete_topics
from kgroups.protocol.types import TopicName

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_NO_ID = UUID(int=0)


async def handle(broker: BrokerApi, ctx: RequestContext, request: object) -> DeleteTopicsResponse:
    if isinstance(request, DeleteTopicsRequest):
        states = request.topics
    else:  # v1-v5 name topics in a plain list
        names: tuple[str, ...] = getattr(request, "topic_names")  # noqa: B009
        states = tuple(DeleteTopicState(name=TopicName(n), topic_id=None) for n in names)
    # Each entry: (name, id, error found before deleting), names resolved from ids.
    entries: list[tuple[str | None, UUID | None, KafkaError | None]] = []
    for state in states:
        name: str | None = state.name
        topic_id = state.topic_id if state.topic_id not in (None, _NO_ID) else None
        try:
            if name is None and topic_id is not None:
                found = broker.topics.by_id(topic_id)
                if found is None:
                    raise KafkaError(ErrorCode.unknown_topic_id, "Unknown topic id")
                name = found.name
            if name is None:
                raise KafkaError(ErrorCode.invalid_request, "Neither topic name nor id given")
        except KafkaError as e:
            entries.append((name, topic_id, e))
            continue
        entries.append((name, topic_id, None))
    to_delete = [name for name, _id, error in entries if error is None and name is not None]
    deleted = iter(await delete_topics(broker, to_delete))
    results = []
    for name, topic_id, error in entries:
        outcome = error if error is not None else next(deleted)
        if isinstance(outcome, KafkaError):
            code, message = outcome.error_code, outcome.message
        else:
            code, message, topic_id = ErrorCode.none, None, outcome.topic_id
        results.append(
            DeletableTopicResult(
                name=None if name is None else TopicName(name),
                topic_id=topic_id or _NO_ID,
                error_code=code,
                error_message=message,
            )
        )
    return DeleteTopicsResponse(throttle_time=NO_THROTTLE, responses=tuple(results))
