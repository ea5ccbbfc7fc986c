"""Guards of the topic APIs: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
Metadata, DescribeTopicPartitions, DescribeProducers, creating, growing and
deleting topics, deleting records."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from kio.schema.create_partitions.v3.response import CreatePartitionsTopicResult
from kio.schema.create_topics.v7.response import CreatableTopicResult
from kio.schema.delete_records.v2.response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsTopicResult,
)
from kio.schema.delete_topics.v6.response import DeletableTopicResult
from kio.schema.describe_producers.v0.response import TopicResponse as ProducersTopicResponse
from kio.schema.fetch.v12 import FetchResponse
from kio.schema.fetch.v12.response import FetchableTopicResponse, PartitionData
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.metadata.v12.response import MetadataResponseTopic
from kio.schema.offset_for_leader_epoch.v4.response import (
    EpochEndOffset,
    OffsetForLeaderTopicResult,
)
from kio.schema.produce.v9 import ProduceResponse
from kio.schema.produce.v9.response import PartitionProduceResponse, TopicProduceResponse
from kio.static.primitive import Records

from kgroups.errors import ErrorCode
from kgroups.handlers.access.checks import (
    CLUSTER,
    CLUSTER_DENIED,
    TOPIC,
    TXN,
    Handler,
    allowed,
    serve_allowed,
)
from kgroups.handlers.access.refusals import partitions_refused
from kgroups.handlers.common import NO_THROTTLE, OPERATIONS_OMITTED
from kgroups.handlers.describe_producers import refused as producers_refused
from kgroups.handlers.describe_topic_partitions import answer as describe_topic_partitions_answer
from kgroups.handlers.fetch_partitions import distinct_partitions
from kgroups.protocol.types import TopicName, i32, i64
from kgroups.protocol.versions import metadata_request
from kgroups.security.authorizer import CLUSTER_NAME, Authorizer, Operation
from kgroups.topics.names import is_legal_topic_name

# Alike in every guard family yet nothing to share: names from checks.py, a guard's signature.
if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

_EMPTY_RECORDS = cast(Records, b"")


async def produce(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    txn = body.transactional_id
    if txn is not None and not allowed(az, ctx, Operation.WRITE, TXN, txn):
        return _produce_errors(body.topic_data, ErrorCode.transactional_id_authorization_failed)
    denied = [t for t in body.topic_data if not allowed(az, ctx, Operation.WRITE, TOPIC, t.name)]
    if not denied:
        return await handler(broker, ctx, body)
    kept = tuple(t for t in body.topic_data if t not in denied)
    refused = _produce_errors(denied, ErrorCode.topic_authorization_failed)
    if not kept:
        return refused if body.acks != 0 else None
    response: Any = await handler(broker, ctx, dataclasses.replace(body, topic_data=kept))
    if response is None:
        return None
    return dataclasses.replace(response, responses=response.responses + refused.responses)


def _produce_errors(topics: Any, error: ErrorCode) -> ProduceResponse:
    return ProduceResponse(
        throttle_time=NO_THROTTLE,
        responses=tuple(
            TopicProduceResponse(
                name=t.name,
                partition_responses=tuple(
                    PartitionProduceResponse(
                        index=p.index,
                        error_code=error,
                        base_offset=i64(-1),
                        log_append_time=None,
                        log_start_offset=i64(-1),
                        record_errors=(),
                    )
                    for p in t.partition_data
                ),
            )
            for t in topics
        ),
    )


async def metadata(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """Named topics without DESCRIBE, and missing ones the caller may not
    create, are answered TOPIC_AUTHORIZATION_FAILED after the others (and never
    created); an all-topics answer leaves out what the caller may not describe."""
    # The handler gets the request as sent (trimmed): it reads the version's flags.
    request, asked = metadata_request(body)
    refused: list[str] = []
    if request.topics is not None:
        auto_create = (ctx.api_version < 4 or request.allow_auto_topic_creation) and (
            broker.config.get_bool("auto.create.topics.enable")
        )
        may_create_any = auto_create and allowed(az, ctx, Operation.CREATE, CLUSTER, CLUSTER_NAME)

        def refuse(name: str | None) -> bool:
            if name is None:  # named by id: checked on the answer
                return False
            if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, name):
                return True
            return (
                auto_create
                and not may_create_any
                and name not in broker.topics
                and not allowed(az, ctx, Operation.CREATE, TOPIC, name)
            )

        refused = [t.name for t in request.topics if t.name is not None and refuse(t.name)]
        if refused:
            body = dataclasses.replace(
                body, topics=tuple(t for t in body.topics if t.name not in refused)
            )
    response: Any = await handler(broker, ctx, body)
    topics = []
    for t in response.topics:
        if t.name in refused:
            continue  # v0 answers all topics to an empty list
        if t.name is not None and not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.name):
            if request.topics is None:
                continue
            t = dataclasses.replace(
                t,
                error_code=ErrorCode.topic_authorization_failed,
                partitions=(),
                topic_id=None,
                topic_authorized_operations=OPERATIONS_OMITTED,
            )
        elif request.include_topic_authorized_operations and t.name is not None:
            bits = az.authorized_operations(ctx.principal, ctx.client_host, TOPIC, t.name)
            t = dataclasses.replace(t, topic_authorized_operations=i32(bits))
        topics.append(t)
    topics += [
        MetadataResponseTopic(
            error_code=ErrorCode.topic_authorization_failed,
            name=TopicName(name),
            topic_id=None,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=OPERATIONS_OMITTED,
        )
        for name in refused
    ]
    response = dataclasses.replace(response, topics=tuple(topics))
    if asked:
        bits = 0  # Kafka's answer without DESCRIBE on the Cluster
        if allowed(az, ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
            bits = az.authorized_operations(ctx.principal, ctx.client_host, CLUSTER, CLUSTER_NAME)
        response = dataclasses.replace(response, cluster_authorized_operations=i32(bits))
    return response


async def fetch(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    body = distinct_partitions(body)  # each partition is checked and answered once
    if body.replica_id >= 0:  # a follower: Cluster CLUSTER_ACTION
        if not allowed(az, ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return _fetch_errors(body.topics, CLUSTER_DENIED)
        return await handler(broker, ctx, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.topic)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "responses", _fetch_refused
    )


def _fetch_refused(denied: Sequence[Any]) -> tuple[FetchableTopicResponse, ...]:
    return _fetch_errors(denied, ErrorCode.topic_authorization_failed).responses


def _fetch_errors(topics: Any, error: ErrorCode) -> FetchResponse:
    return FetchResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        responses=tuple(
            FetchableTopicResponse(
                topic=t.topic,
                partitions=tuple(
                    PartitionData(
                        partition_index=p.partition,
                        error_code=error,
                        high_watermark=i64(-1),
                        aborted_transactions=None,
                        # Empty, never null: librdkafka drops a response holding a
                        # null set (`invalid MessageSetSize -1`), as Kafka never sends one.
                        records=_EMPTY_RECORDS,
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        ),
    )


_list_offsets_refused = partitions_refused(ListOffsetsTopicResponse, ListOffsetsPartitionResponse)


async def list_offsets(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.name)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "topics", _list_offsets_refused
    )


async def offset_for_leader_epoch(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    # Brokers ask it of their leaders under Cluster CLUSTER_ACTION; consumers
    # (KIP-320) need Topic DESCRIBE.
    if allowed(az, ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
        return await handler(broker, ctx, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.topic)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "topics", _epochs_refused
    )


def _epochs_refused(denied: Sequence[Any]) -> tuple[OffsetForLeaderTopicResult, ...]:
    refused = ErrorCode.topic_authorization_failed
    return tuple(
        OffsetForLeaderTopicResult(
            topic=t.topic,
            partitions=tuple(
                EpochEndOffset(error_code=refused, partition=p.partition) for p in t.partitions
            ),
        )
        for t in denied
    )


async def create_topics(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if allowed(az, ctx, Operation.CREATE, CLUSTER, CLUSTER_NAME):
        return await handler(broker, ctx, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.CREATE, TOPIC, t.name)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "topics", _created_refused
    )


def _created_refused(denied: Sequence[Any]) -> tuple[CreatableTopicResult, ...]:
    return tuple(
        CreatableTopicResult(
            name=t.name,
            topic_id=None,
            error_code=ErrorCode.topic_authorization_failed,
            error_message=None,
            configs=None,
        )
        for t in denied
    )


async def delete_topics(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    # v1-v5 list names; v6 lists states with a name or an id: an id is checked
    # under the name it stands for (an unknown id is the handler's to refuse).
    by_state = hasattr(body, "topics")
    entries = body.topics if by_state else body.topic_names
    names = [_deleted_name(broker, e) if by_state else e for e in entries]
    denied = [
        e
        for e, n in zip(entries, names, strict=True)
        if n is not None and not allowed(az, ctx, Operation.DELETE, TOPIC, n)
    ]
    field = "topics" if by_state else "topic_names"
    return await serve_allowed(
        broker, ctx, body, handler, field, denied, "responses", _deleted_refused
    )


def _deleted_refused(denied: Sequence[Any]) -> tuple[DeletableTopicResult, ...]:
    return tuple(
        DeletableTopicResult(
            name=getattr(e, "name", e),  # a v1-v5 entry is the name itself
            topic_id=getattr(e, "topic_id", None),
            error_code=ErrorCode.topic_authorization_failed,
        )
        for e in denied
    )


def _deleted_name(broker: BrokerApi, state: Any) -> str | None:
    if state.name is not None:
        return str(state.name)
    topic = broker.topics.by_id(state.topic_id) if state.topic_id is not None else None
    return None if topic is None else topic.name


async def create_partitions(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.ALTER, TOPIC, t.name)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "results", _grown_refused
    )


def _grown_refused(denied: Sequence[Any]) -> tuple[CreatePartitionsTopicResult, ...]:
    return tuple(
        CreatePartitionsTopicResult(
            name=t.name, error_code=ErrorCode.topic_authorization_failed, error_message=None
        )
        for t in denied
    )


async def delete_records(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.DELETE, TOPIC, t.name)]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "topics", _records_refused
    )


def _records_refused(denied: Sequence[Any]) -> tuple[DeleteRecordsTopicResult, ...]:
    return tuple(
        DeleteRecordsTopicResult(
            name=t.name,
            partitions=tuple(
                DeleteRecordsPartitionResult(
                    partition_index=p.partition_index,
                    low_watermark=i64(-1),
                    error_code=ErrorCode.topic_authorization_failed,
                )
                for p in t.partitions
            ),
        )
        for t in denied
    )


async def describe_topic_partitions(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """Topic DESCRIBE decides which topics are seen (the paging counts only
    those); each one's authorized operations are the caller's."""
    return await describe_topic_partitions_answer(
        broker,
        ctx,
        body,
        lambda name: allowed(az, ctx, Operation.DESCRIBE, TOPIC, name),
        lambda name: az.authorized_operations(ctx.principal, ctx.client_host, TOPIC, name),
    )


async def describe_producers(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    # An illegal name is the handler's to answer (INVALID_TOPIC_EXCEPTION), as
    # Kafka checks it before the ACLs.
    denied = [
        t
        for t in body.topics
        if is_legal_topic_name(t.name) and not allowed(az, ctx, Operation.READ, TOPIC, t.name)
    ]
    return await serve_allowed(
        broker, ctx, body, handler, "topics", denied, "topics", _producers_refused
    )


def _producers_refused(denied: Sequence[Any]) -> tuple[ProducersTopicResponse, ...]:
    refused = ErrorCode.topic_authorization_failed
    return tuple(
        ProducersTopicResponse(
            name=t.name,
            partitions=tuple(producers_refused(p, refused) for p in t.partition_indexes),
        )
        for t in denied
    )
