"""The transaction coordinator's APIs: InitProducerId with a transactional id
(from init_producer_id.py), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions and ListTransactions.

Each builds the version-free request of transactions/messages.py, runs it on
the id's shard (runtime/transaction_runtime.py) and writes the answer in the
client's version. In a cluster the shard runs on the leader of the id's
`__transaction_state` partition; another broker answers NOT_COORDINATOR and
the client looks for the coordinator again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.add_offsets_to_txn.v4 import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kio.schema.add_partitions_to_txn.v3 import response as add_v3
from kio.schema.add_partitions_to_txn.v4 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v4 import response as add_v4
from kio.schema.describe_transactions.v0 import request as describe_req
from kio.schema.describe_transactions.v0 import response as describe_resp
from kio.schema.end_txn.v4 import EndTxnRequest, EndTxnResponse
from kio.schema.list_transactions.v2 import request as list_req
from kio.schema.list_transactions.v2 import response as list_resp
from kio.schema.types import TransactionalId
from kio.static.primitive import TZAware, i32Timedelta

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import ProducerId, TopicName, i16, i32
from kgroups.transactions import messages as m
from kgroups.transactions.state import TxnState

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def init_producer_id(
    broker: BrokerApi, ctx: RequestContext, request: Any
) -> m.InitProducerIdAnswer:
    """InitProducerId with a transactional id (the handler of init_producer_id.py asks)."""
    req = m.InitProducerId(
        request.transactional_id,
        int(request.transaction_timeout.total_seconds() * 1000),
        int(request.producer_id),
        int(request.producer_epoch),
    )
    answer = await _call(
        broker, ctx, req.transactional_id, lambda s, c, now: s.init_producer_id(req, c, now)
    )
    if isinstance(answer, ErrorCode):
        return m.InitProducerIdAnswer(answer)
    assert isinstance(answer, m.InitProducerIdAnswer)
    return answer


async def add_partitions_to_txn(broker: BrokerApi, ctx: RequestContext, request: Any) -> Any:
    """v0-v3: one transaction, from a producer; v4+: several, from a broker."""
    if isinstance(request, AddPartitionsToTxnRequest):
        results = []
        for txn in request.transactions:
            add = m.AddPartitions(
                txn.transactional_id,
                int(txn.producer_id),
                int(txn.producer_epoch),
                tuple((t.name, int(p)) for t in txn.topics for p in t.partitions),
                txn.verify_only,
            )
            errors = await _add(broker, ctx, add)
            results.append(
                add_v4.AddPartitionsToTxnResult(
                    transactional_id=txn.transactional_id,
                    topic_results=_topic_results(add_v4, errors),
                )
            )
        return add_v4.AddPartitionsToTxnResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            results_by_transaction=tuple(results),
        )
    add = m.AddPartitions(
        request.v3_and_below_transactional_id,
        int(request.v3_and_below_producer_id),
        int(request.v3_and_below_producer_epoch),
        tuple((t.name, int(p)) for t in request.v3_and_below_topics for p in t.partitions),
    )
    errors = await _add(broker, ctx, add)
    return add_v3.AddPartitionsToTxnResponse(
        throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=_topic_results(add_v3, errors)
    )


async def _add(
    broker: BrokerApi, ctx: RequestContext, add: m.AddPartitions
) -> dict[m.TopicPartition, ErrorCode]:
    answer = await _call(
        broker, ctx, add.transactional_id, lambda s, c, now: s.add_partitions(add, c, now)
    )
    if isinstance(answer, ErrorCode):
        return dict.fromkeys(add.partitions, answer)
    assert isinstance(answer, m.AddPartitionsAnswer)
    return answer.errors


def _topic_results(schema: Any, errors: dict[m.TopicPartition, ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            schema.AddPartitionsToTxnPartitionResult(
                partition_index=i32(partition), partition_error_code=error
            )
        )
    return tuple(
        schema.AddPartitionsToTxnTopicResult(name=topic, results_by_partition=tuple(results))
        for topic, results in by_topic.items()
    )


async def add_offsets_to_txn(
    broker: BrokerApi, ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    req = m.AddOffsets(
        request.transactional_id,
        int(request.producer_id),
        int(request.producer_epoch),
        request.group_id,
    )
    answer = await _call(
        broker, ctx, req.transactional_id, lambda s, c, now: s.add_offsets(req, c, now)
    )
    error = answer if isinstance(answer, ErrorCode) else answer.error
    return AddOffsetsToTxnResponse(throttle_time=NO_THROTTLE, error_code=error)


async def end_txn(broker: BrokerApi, ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    req = m.EndTxn(
        request.transactional_id,
        int(request.producer_id),
        int(request.producer_epoch),
        request.committed,
    )
    answer = await _call(
        broker, ctx, req.transactional_id, lambda s, c, now: s.end_txn(req, c, now)
    )
    error = answer if isinstance(answer, ErrorCode) else answer.error
    return EndTxnResponse(throttle_time=NO_THROTTLE, error_code=error)


async def describe_transactions(
    broker: BrokerApi, ctx: RequestContext, request: describe_req.DescribeTransactionsRequest
) -> describe_resp.DescribeTransactionsResponse:
    runtime = broker.txn_coordinator
    described: dict[str, m.DescribedTransaction] = {}
    ids = tuple(dict.fromkeys(request.transactional_ids))
    by_partition: dict[int, list[str]] = {}
    for txn_id in ids:
        by_partition.setdefault(runtime.partition_for(txn_id), []).append(txn_id)
    for partition, part_ids in by_partition.items():
        wanted = tuple(part_ids)
        try:
            answer = await runtime.call_partition(partition, ctx, _describe(wanted))
        except KafkaError as e:
            answer = tuple(m.DescribedTransaction(e.error_code, i) for i in wanted)
        for d in answer:
            described[d.transactional_id] = d
    return describe_resp.DescribeTransactionsResponse(
        throttle_time=NO_THROTTLE,
        transaction_states=tuple(_described(described[i]) for i in ids),
    )


def _describe(ids: tuple[str, ...]) -> Any:
    return lambda shard, c, now: shard.describe_transactions(ids, c, now)


def _described(d: m.DescribedTransaction) -> describe_resp.TransactionState:
    by_topic: dict[str, list[Any]] = {}
    for topic, partition in d.partitions:
        by_topic.setdefault(topic, []).append(i32(partition))
    return describe_resp.TransactionState(
        error_code=d.error,
        transactional_id=TransactionalId(d.transactional_id),
        transaction_state=d.state,
        transaction_timeout=i32Timedelta.parse(timedelta(milliseconds=d.timeout_ms)),
        transaction_start_time=TZAware.truncate(
            datetime.fromtimestamp(max(d.start_ms, 0) / 1000, UTC)
        ),
        producer_id=ProducerId(d.producer_id),
        producer_epoch=i16(d.producer_epoch),
        topics=tuple(
            describe_resp.TopicData(topic=TopicName(t), partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
    )


async def list_transactions(
    broker: BrokerApi, ctx: RequestContext, request: list_req.ListTransactionsRequest
) -> list_resp.ListTransactionsResponse:
    runtime = broker.txn_coordinator
    req = m.ListTransactions(
        tuple(request.state_filters),
        tuple(int(p) for p in request.producer_id_filters),
        int(request.duration_filter),
        request.transactional_id_pattern,
    )
    error = ErrorCode.none
    unknown: tuple[str, ...] = ()
    listed: list[m.ListedTransaction] = []
    for partition in runtime.served_partitions():
        try:
            answer = await runtime.call_partition(
                partition, ctx, lambda s, c, now: s.list_transactions(req, c, now)
            )
        except KafkaError as e:
            error = e.error_code
            continue
        assert isinstance(answer, m.ListTransactionsAnswer)
        if answer.error is not ErrorCode.none:
            error = answer.error
        unknown = answer.unknown_state_filters
        listed.extend(answer.transactions)
    if not listed and not unknown:
        unknown = tuple(s for s in dict.fromkeys(req.states) if TxnState.from_name(s) is None)
    return list_resp.ListTransactionsResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=tuple(
            list_resp.TransactionState(
                transactional_id=TransactionalId(t.transactional_id),
                producer_id=ProducerId(t.producer_id),
                transaction_state=t.state,
            )
            for t in listed
        ),
    )


async def _call(broker: BrokerApi, ctx: RequestContext, transactional_id: str, handler: Any) -> Any:
    """The shard's answer, or the error that kept the call from it."""
    try:
        return await broker.txn_coordinator.call(transactional_id, ctx, handler)
    except KafkaError as e:
        return e.error_code
