"""Guards of the transaction APIs: producer ids, transactions and their markers."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import kio.schema.add_partitions_to_txn.v3.response as add_v3
import kio.schema.add_partitions_to_txn.v4.response as add_v4
from kio.schema.add_offsets_to_txn.v4 import AddOffsetsToTxnResponse
from kio.schema.end_txn.v4 import EndTxnResponse
from kio.schema.init_producer_id.v4 import InitProducerIdResponse
from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponseTopic
from kio.schema.write_txn_markers.v2 import WriteTxnMarkersResponse
from kio.schema.write_txn_markers.v2.response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
)

from kgroups.coordinator.offset_handlers import txn_commit_response
from kgroups.errors import ErrorCode
from kgroups.handlers.access.checks import (
    CLUSTER,
    CLUSTER_DENIED,
    GROUP,
    TOPIC,
    TXN,
    TXN_DENIED,
    Guard,
    Handler,
    allowed,
    cluster_guard,
    serve_allowed,
)
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import ProducerId, i16
from kgroups.security.authorizer import CLUSTER_NAME, Authorizer, Operation

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def init_producer_id(
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
        error = CLUSTER_DENIED
    if not ok:
        return InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        )
    return await handler(broker, ctx, body)


def txn_guard(extra_group: bool, denial: Callable[[ErrorCode], object]) -> Guard:
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


async def txn_offset_commit(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if not allowed(az, ctx, Operation.WRITE, TXN, body.transactional_id):
        return txn_commit_response(body, TXN_DENIED, {})
    if not allowed(az, ctx, Operation.READ, GROUP, body.group_id):
        return txn_commit_response(body, ErrorCode.group_authorization_failed, {})
    denied = [t for t in body.topics if not allowed(az, ctx, Operation.READ, TOPIC, t.name)]

    def refuse(denied: Sequence[Any]) -> tuple[TxnOffsetCommitResponseTopic, ...]:
        cut = dataclasses.replace(body, topics=tuple(denied))
        return txn_commit_response(cut, ErrorCode.topic_authorization_failed, {}).topics

    return await serve_allowed(broker, ctx, body, handler, "topics", denied, "topics", refuse)


async def describe_transactions(
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


async def list_transactions(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    response: Any = await handler(broker, ctx, body)
    states = tuple(
        s
        for s in response.transaction_states
        if allowed(az, ctx, Operation.DESCRIBE, TXN, s.transactional_id)
    )
    return dataclasses.replace(response, transaction_states=states)


async def add_partitions_to_txn(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    if hasattr(body, "transactions"):  # v4+: a broker verifying, Cluster CLUSTER_ACTION
        if allowed(az, ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return await handler(broker, ctx, body)
        return add_v4.AddPartitionsToTxnResponse(
            throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, results_by_transaction=()
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


end_txn = txn_guard(False, lambda e: EndTxnResponse(throttle_time=NO_THROTTLE, error_code=e))
add_offsets_to_txn = txn_guard(
    True, lambda e: AddOffsetsToTxnResponse(throttle_time=NO_THROTTLE, error_code=e)
)


def _markers_denied(body: Any) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(
        markers=tuple(
            WritableTxnMarkerResult(
                producer_id=m.producer_id,
                topics=tuple(
                    WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=tuple(
                            WritableTxnMarkerPartitionResult(
                                partition_index=p, error_code=CLUSTER_DENIED
                            )
                            for p in t.partition_indexes
                        ),
                    )
                    for t in m.topics
                ),
            )
            for m in body.markers
        )
    )


write_txn_markers = cluster_guard(Operation.CLUSTER_ACTION, _markers_denied)
