"""What each API requires of the caller's ACLs, in one table (Kafka's checks,
Kafka's error codes).

Dispatch consults GUARDS only when an authorizer is configured. A guard gets
the request and the handler; it answers a denial itself, trims the request to
what the caller may touch, or trims the handler's answer to what the caller may
see (Metadata, ListGroups, DescribeGroups).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import kio.schema.add_partitions_to_txn.v3.response as add_v3
import kio.schema.add_partitions_to_txn.v4.response as add_v4
from kio.schema.add_offsets_to_txn.v4 import AddOffsetsToTxnResponse
from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsResponse
from kio.schema.alter_user_scram_credentials.v0.response import AlterUserScramCredentialsResult
from kio.schema.create_acls.v3 import CreateAclsResponse
from kio.schema.create_acls.v3.response import AclCreationResult
from kio.schema.create_topics.v7.response import CreatableTopicResult
from kio.schema.delete_acls.v3 import DeleteAclsResponse
from kio.schema.delete_acls.v3.response import DeleteAclsFilterResult
from kio.schema.delete_groups.v2.response import DeletableGroupResult
from kio.schema.delete_topics.v6.response import DeletableTopicResult
from kio.schema.describe_acls.v3 import DescribeAclsResponse
from kio.schema.describe_configs.v4.response import DescribeConfigsResult
from kio.schema.describe_user_scram_credentials.v0 import DescribeUserScramCredentialsResponse
from kio.schema.describe_user_scram_credentials.v0.response import (
    DescribeUserScramCredentialsResult,
)
from kio.schema.end_txn.v4 import EndTxnResponse
from kio.schema.fetch.v12 import FetchResponse
from kio.schema.fetch.v12.response import FetchableTopicResponse, PartitionData
from kio.schema.find_coordinator.v3 import FindCoordinatorResponse as FindCoordinatorResponseV3
from kio.schema.find_coordinator.v4.response import Coordinator
from kio.schema.init_producer_id.v4 import InitProducerIdResponse
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.metadata.v12.response import MetadataResponseTopic
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kio.schema.offset_fetch.v9.response import OffsetFetchResponseGroup
from kio.schema.produce.v9 import ProduceResponse
from kio.schema.produce.v9.response import PartitionProduceResponse, TopicProduceResponse
from kio.schema.write_txn_markers.v2 import WriteTxnMarkersResponse
from kio.schema.write_txn_markers.v2.response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
)

from kgroups.coordinator.consumer_messages import consumer_heartbeat_response, heartbeat_error
from kgroups.coordinator.offset_handlers import txn_commit_response
from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, ProducerId, TopicName, i16, i32, i64
from kgroups.protocol.versions import metadata_request, offset_fetch_groups, offset_fetch_response
from kgroups.server.authorizer import CLUSTER_NAME, Authorizer, Operation, ResourceType
from kgroups.server.handlers.common import NO_THROTTLE, OPERATIONS_OMITTED
from kgroups.server.handlers.groups import fetch_group_of, group_error_response

if TYPE_CHECKING:
    from kgroups.server.broker_api import BrokerApi
    from kgroups.server.context import RequestContext

Handler = Callable[["BrokerApi", "RequestContext", Any], Awaitable[object]]
Guard = Callable[
    [Authorizer, "BrokerApi", "RequestContext", Any, Handler], Awaitable[object | None]
]

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)


def allowed(
    az: Authorizer, ctx: RequestContext, op: Operation, rtype: ResourceType, name: str
) -> bool:
    return az.authorize(ctx.principal, ctx.client_host, op, rtype, name)


def _group(op: Operation) -> Guard:
    """One group, whole request denied (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""

    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, GROUP, body.group_id):
            return group_error_response(ctx, ErrorCode.group_authorization_failed, body)
        return await handler(broker, ctx, body)

    return guard


def _cluster(op: Operation, denial: Callable[[Any], object]) -> Guard:
    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, op, CLUSTER, CLUSTER_NAME):
            return denial(body)
        return await handler(broker, ctx, body)

    return guard


_DENIED = ErrorCode.cluster_authorization_failed
TXN_DENIED = ErrorCode.transactional_id_authorization_failed


async def _serve_allowed(
    broker: BrokerApi,
    ctx: RequestContext,
    body: Any,
    handler: Handler,
    entries: str,
    denied: Sequence[Any],
    results: str,
    refuse: Callable[[Sequence[Any]], tuple[Any, ...]],
) -> object:
    """Serve the entries of ``body.<entries>`` the caller may touch; the
    ``denied`` ones are answered ``refuse(denied)``, added to the response's
    ``<results>``, as Kafka answers a partly authorized request."""
    if not denied:
        return await handler(broker, ctx, body)
    kept = tuple(e for e in getattr(body, entries) if e not in denied)
    response: Any = await handler(broker, ctx, dataclasses.replace(body, **{entries: kept}))
    answered = getattr(response, results) + refuse(denied)
    return dataclasses.replace(response, **{results: answered})


async def _offset_commit(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
        return group_error_response(ctx, ErrorCode.group_authorization_failed, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.name)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "topics",
        lambda denied: (
            group_error_response(
                ctx,
                ErrorCode.topic_authorization_failed,
                dataclasses.replace(body, topics=tuple(denied)),
            ).topics
        ),
    )


async def _produce(
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


async def _init_producer_id(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    txn = body.transactional_id
    if txn is not None:
        ok, error = (
            allowed(az, ctx, Operation.WRITE, TXN, txn),
            ErrorCode.transactional_id_authorization_failed,
        )
    else:
        # Idempotence: Cluster IDEMPOTENT_WRITE, or WRITE on some topic (Kafka 3.x).
        ok = allowed(
            az, ctx, Operation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME
        ) or az.authorize_any(ctx.principal, ctx.client_host, Operation.WRITE, TOPIC)
        error = _DENIED
    if not ok:
        return InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        )
    return await handler(broker, ctx, body)


def _txn(extra_group: bool, denial: Callable[[ErrorCode], object]) -> Guard:
    """EndTxn, AddOffsetsToTxn: TransactionalId WRITE (and Group READ)."""

    async def guard(
        az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
    ) -> object:
        if not allowed(az, ctx, Operation.WRITE, TXN, body.transactional_id):
            return denial(ErrorCode.transactional_id_authorization_failed)
        if extra_group and not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
            return denial(ErrorCode.group_authorization_failed)
        return await handler(broker, ctx, body)

    return guard


async def _metadata(
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


async def _list_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    if allowed(az, ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return response
    groups = tuple(
        g for g in response.groups if allowed(az, ctx, Operation.DESCRIBE, GROUP, g.group_id)
    )
    return dataclasses.replace(response, groups=groups)


def _described_groups(
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


async def _describe_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    return _described_groups(az, ctx, body, response, protocol_type="", protocol_data="")


async def _describe_cluster(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    # Kafka answers any client; Cluster DESCRIBE only decides whether the
    # authorized-operations bits are given (else 0).
    response: Any = await handler(broker, ctx, body)
    if body.include_cluster_authorized_operations:
        bits = 0
        if allowed(az, ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
            bits = az.authorized_operations(ctx.principal, ctx.client_host, CLUSTER, CLUSTER_NAME)
        response = dataclasses.replace(response, cluster_authorized_operations=i32(bits))
    return response


async def _fetch(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if body.replica_id >= 0:  # a follower: Cluster CLUSTER_ACTION
        if not allowed(az, ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return _fetch_errors(body.topics, _DENIED)
        return await handler(broker, ctx, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.topic)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "responses",
        lambda denied: _fetch_errors(denied, ErrorCode.topic_authorization_failed).responses,
    )


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
                        records=None,
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        ),
    )


async def _list_offsets(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.DESCRIBE, TOPIC, t.name)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "topics",
        lambda denied: tuple(
            ListOffsetsTopicResponse(
                name=t.name,
                partitions=tuple(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.topic_authorization_failed,
                    )
                    for p in t.partitions
                ),
            )
            for t in denied
        ),
    )


async def _delete_groups(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    names = body.groups_names
    denied = [g for g in names if not allowed(az, ctx, Operation.DELETE, GROUP, g)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "groups_names",
        denied,
        "results",
        lambda denied: tuple(
            DeletableGroupResult(group_id=g, error_code=ErrorCode.group_authorization_failed)
            for g in denied
        ),
    )


async def _offset_delete(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.DELETE, GROUP, body.group_id):
        return group_error_response(ctx, ErrorCode.group_authorization_failed, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.name)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "topics",
        lambda denied: tuple(
            OffsetDeleteResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.topic_authorization_failed,
                    )
                    for p in t.partitions
                ),
            )
            for t in denied
        ),
    )


_KEY_TYPES = {0: (GROUP, ErrorCode.group_authorization_failed), 1: (TXN, TXN_DENIED)}


async def _find_coordinator(
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
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "coordinator_keys",
        denied,
        "coordinators",
        lambda denied: tuple(
            Coordinator(
                key=k,
                node_id=BrokerId(-1),
                host="",
                port=i32(-1),
                error_code=error,
                error_message=None,
            )
            for k in denied
        ),
    )


async def _create_topics(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if allowed(az, ctx, Operation.CREATE, CLUSTER, CLUSTER_NAME):
        return await handler(broker, ctx, body)
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.CREATE, TOPIC, t.name)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "topics",
        lambda denied: tuple(
            CreatableTopicResult(
                name=t.name,
                topic_id=None,
                error_code=ErrorCode.topic_authorization_failed,
                error_message=None,
                configs=None,
            )
            for t in denied
        ),
    )


async def _delete_topics(
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
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        field,
        denied,
        "responses",
        lambda denied: tuple(
            DeletableTopicResult(
                name=e.name if by_state else e,
                topic_id=getattr(e, "topic_id", None),
                error_code=ErrorCode.topic_authorization_failed,
            )
            for e in denied
        ),
    )


def _deleted_name(broker: BrokerApi, state: Any) -> str | None:
    if state.name is not None:
        return str(state.name)
    topic = broker.topics.by_id(state.topic_id) if state.topic_id is not None else None
    return None if topic is None else topic.name


_CONFIG_RESOURCES = {2: (TOPIC, ErrorCode.topic_authorization_failed), 4: (CLUSTER, _DENIED)}


async def _describe_configs(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    def may(r: Any) -> bool:
        rtype, _ = _CONFIG_RESOURCES.get(r.resource_type, (None, None))
        if rtype is None:
            return True  # unknown resource types are the handler's to refuse
        name = CLUSTER_NAME if rtype == CLUSTER else r.resource_name
        return allowed(az, ctx, Operation.DESCRIBE_CONFIGS, rtype, name)

    denied = [r for r in body.resources if not may(r)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "resources",
        denied,
        "results",
        lambda denied: tuple(
            DescribeConfigsResult(
                error_code=_CONFIG_RESOURCES[r.resource_type][1],
                error_message=None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=(),
            )
            for r in denied
        ),
    )


async def _consumer_heartbeat(
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


async def _consumer_group_describe(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    return _described_groups(az, ctx, body, await handler(broker, ctx, body))


async def _txn_offset_commit(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.WRITE, TXN, body.transactional_id):
        return txn_commit_response(body, TXN_DENIED, {})
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
        return txn_commit_response(body, ErrorCode.group_authorization_failed, {})
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.name)]
    return await _serve_allowed(
        broker,
        ctx,
        body,
        handler,
        "topics",
        denied,
        "topics",
        lambda denied: (
            txn_commit_response(
                dataclasses.replace(body, topics=tuple(denied)),
                ErrorCode.topic_authorization_failed,
                {},
            ).topics
        ),
    )


async def _describe_transactions(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    states = tuple(
        s
        if allowed(az, ctx, Operation.DESCRIBE, TXN, s.transactional_id)
        else dataclasses.replace(s, error_code=TXN_DENIED, transaction_state="", topics=())
        for s in response.transaction_states
    )
    return dataclasses.replace(response, transaction_states=states)


async def _list_transactions(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    states = tuple(
        s
        for s in response.transaction_states
        if allowed(az, ctx, Operation.DESCRIBE, TXN, s.transactional_id)
    )
    return dataclasses.replace(response, transaction_states=states)


async def _offset_fetch(
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


async def _add_partitions_to_txn(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if hasattr(body, "transactions"):  # v4+: a broker verifying, Cluster CLUSTER_ACTION
        if allowed(az, ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return await handler(broker, ctx, body)
        return add_v4.AddPartitionsToTxnResponse(
            throttle_time=NO_THROTTLE, error_code=_DENIED, results_by_transaction=()
        )
    topics = body.v3_and_below_topics
    if not allowed(az, ctx, Operation.WRITE, TXN, body.v3_and_below_transactional_id):
        return _add_partitions_errors(topics, lambda _: TXN_DENIED)
    denied = {t.name for t in topics if not allowed(az, ctx, Operation.WRITE, TOPIC, t.name)}
    if not denied:
        return await handler(broker, ctx, body)
    # As Kafka: nothing is added; the rest are not attempted.
    return _add_partitions_errors(
        topics,
        lambda name: (
            ErrorCode.topic_authorization_failed
            if name in denied
            else ErrorCode.operation_not_attempted
        ),
    )


def _add_partitions_errors(
    topics: Any, error: Callable[[str], ErrorCode]
) -> add_v3.AddPartitionsToTxnResponse:
    return add_v3.AddPartitionsToTxnResponse(
        throttle_time=NO_THROTTLE,
        results_by_topic_v3_and_below=tuple(
            add_v3.AddPartitionsToTxnTopicResult(
                name=t.name,
                results_by_partition=tuple(
                    add_v3.AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=error(t.name)
                    )
                    for p in t.partitions
                ),
            )
            for t in topics
        ),
    )


def _describe_scram_denied(body: Any) -> DescribeUserScramCredentialsResponse:
    # Kafka sets the error on the response and on a result per requested user;
    # librdkafka (2.16) crashes on a top-level error, so when users are named the
    # error is given per user only: every client still sees it for each. Asked
    # for every user, there is no other place for it than the response.
    users = body.users or ()
    return DescribeUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none if users else _DENIED,
        error_message=None if users else "Cluster DESCRIBE is needed to describe credentials",
        results=tuple(
            DescribeUserScramCredentialsResult(
                user=u.name, error_code=_DENIED, error_message=None, credential_infos=()
            )
            for u in users
        ),
    )


def _alter_scram_denied(body: Any) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys(c.name for c in body.deletions + body.upsertions)
    return AlterUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            AlterUserScramCredentialsResult(user=u, error_code=_DENIED, error_message=None)
            for u in users
        ),
    )


GUARDS: dict[int, Guard] = {
    apis.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(Operation.DESCRIBE, _describe_scram_denied),
    apis.ALTER_USER_SCRAM_CREDENTIALS: _cluster(Operation.ALTER, _alter_scram_denied),
    apis.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    apis.OFFSET_FETCH: _offset_fetch,
    apis.CREATE_TOPICS: _create_topics,
    apis.DELETE_TOPICS: _delete_topics,
    apis.DESCRIBE_CONFIGS: _describe_configs,
    apis.CONSUMER_GROUP_HEARTBEAT: _consumer_heartbeat,
    apis.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
    apis.TXN_OFFSET_COMMIT: _txn_offset_commit,
    apis.DESCRIBE_TRANSACTIONS: _describe_transactions,
    apis.LIST_TRANSACTIONS: _list_transactions,
    apis.FETCH: _fetch,
    apis.LIST_OFFSETS: _list_offsets,
    apis.DELETE_GROUPS: _delete_groups,
    apis.OFFSET_DELETE: _offset_delete,
    apis.FIND_COORDINATOR: _find_coordinator,
    apis.WRITE_TXN_MARKERS: _cluster(
        Operation.CLUSTER_ACTION,
        lambda body: WriteTxnMarkersResponse(
            markers=tuple(
                WritableTxnMarkerResult(
                    producer_id=m.producer_id,
                    topics=tuple(
                        WritableTxnMarkerTopicResult(
                            name=t.name,
                            partitions=tuple(
                                WritableTxnMarkerPartitionResult(
                                    partition_index=p, error_code=_DENIED
                                )
                                for p in t.partition_indexes
                            ),
                        )
                        for t in m.topics
                    ),
                )
                for m in body.markers
            )
        ),
    ),
    apis.JOIN_GROUP: _group(Operation.READ),
    apis.SYNC_GROUP: _group(Operation.READ),
    apis.HEARTBEAT: _group(Operation.READ),
    apis.LEAVE_GROUP: _group(Operation.READ),
    apis.OFFSET_COMMIT: _offset_commit,
    apis.DESCRIBE_GROUPS: _describe_groups,
    apis.LIST_GROUPS: _list_groups,
    apis.PRODUCE: _produce,
    apis.METADATA: _metadata,
    apis.INIT_PRODUCER_ID: _init_producer_id,
    apis.END_TXN: _txn(False, lambda e: EndTxnResponse(throttle_time=NO_THROTTLE, error_code=e)),
    apis.ADD_OFFSETS_TO_TXN: _txn(
        True, lambda e: AddOffsetsToTxnResponse(throttle_time=NO_THROTTLE, error_code=e)
    ),
    apis.DESCRIBE_CLUSTER: _describe_cluster,
    apis.CREATE_ACLS: _cluster(
        Operation.ALTER,
        lambda body: CreateAclsResponse(
            throttle_time=NO_THROTTLE,
            results=tuple(
                AclCreationResult(error_code=_DENIED, error_message=None) for _ in body.creations
            ),
        ),
    ),
    apis.DELETE_ACLS: _cluster(
        Operation.ALTER,
        lambda body: DeleteAclsResponse(
            throttle_time=NO_THROTTLE,
            filter_results=tuple(
                DeleteAclsFilterResult(error_code=_DENIED, error_message=None, matching_acls=())
                for _ in body.filters
            ),
        ),
    ),
    apis.DESCRIBE_ACLS: _cluster(
        Operation.DESCRIBE,
        lambda body: DescribeAclsResponse(
            throttle_time=NO_THROTTLE, error_code=_DENIED, error_message=None, resources=()
        ),
    ),
}
