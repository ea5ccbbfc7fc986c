"""Produce: validate and append record batches, acknowledge per partition.

An acknowledgement (acks=1 or -1; a single broker is its own ISR) is sent after
the batch is written to the operating system, so it survives kill -9 of the
broker; fsync follows the flush policy (`log.flush.interval.*`). When the policy
asks for an fsync after an append, the partition is acknowledged only once that
fsync succeeded; a failed one answers KAFKA_STORAGE_ERROR (the log is offline).

Transactional batches (with a transactional id) are appended like idempotent
ones and open the producer's transaction on the partition; the first batch of
a transaction on a partition is first verified with the transaction
coordinator (``broker.transactions``, ``transaction.partition.verification.enable``).
Cluster mode does not take transactional batches yet.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import TYPE_CHECKING, cast

from kio.schema.produce.v9 import ProduceRequest, ProduceResponse
from kio.schema.produce.v9.response import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kio.static.primitive import TZAware

from kgroups.errors import ErrorCode, KafkaError, RecordsRejected, WriteInDoubt
from kgroups.handlers.common import NO_THROTTLE, still_leader
from kgroups.handlers.pipelining import release
from kgroups.partitions.recompression import needs_worker, recompressed_payload
from kgroups.protocol.types import i32, i64
from kgroups.records.batch import HEADER_SIZE, read_header
from kgroups.topics.placement import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

log = logging.getLogger(__name__)


async def handle(
    broker: BrokerApi, ctx: RequestContext, request: ProduceRequest
) -> ProduceResponse | None:
    request_error = ErrorCode.none
    message: str | None = None
    if request.acks not in (0, 1, -1):
        request_error = ErrorCode.invalid_required_acks
    refused: dict[tuple[str, int], ErrorCode] = {}
    if (
        request.transactional_id is not None
        and request_error == ErrorCode.none
        and broker.transactions is not None
        and broker.config.get_bool("transaction.partition.verification.enable")
    ):
        refused = await _verify(broker, request.transactional_id, request)
    now = broker.clock.now_ms()
    responses: list[list[PartitionProduceResponse]] = []
    flushes: list[tuple[list[PartitionProduceResponse], int, asyncio.Future[None]]] = []
    # Refusals drawn from producer state a stale leader may hold (cluster mode).
    doubtful: list[tuple[list[PartitionProduceResponse], int, str]] = []
    leads_everything = broker.partitions.leads_everything
    for topic in request.topic_data:
        partitions: list[PartitionProduceResponse] = []
        responses.append(partitions)
        for data in topic.partition_data:
            if request_error != ErrorCode.none:
                partitions.append(_failed(data.index, request_error, message))
                continue
            if refused and (topic.name, data.index) in refused:
                partitions.append(_failed(data.index, refused[(topic.name, data.index)], None))
                continue
            records: bytes | bytearray | memoryview | None = data.records
            if records:
                records = await _recompress_off_loop(broker, topic.name, data.index, records)
            response, flushed = _append(
                broker, topic.name, data.index, records, now, len(data.records or b"")
            )
            if flushed is not None:
                flushes.append((partitions, len(partitions), flushed))
            elif response.error_code in _PRODUCER_STATE_ERRORS and not leads_everything:
                doubtful.append((partitions, len(partitions), topic.name))
            partitions.append(response)
    if flushes:
        release()  # appended in request order: the connection may take the next Produce
    for partitions, i, name in doubtful:
        if not await still_leader(broker, name, partitions[i].index):
            partitions[i] = _failed(partitions[i].index, ErrorCode.not_leader_or_follower, None)
        elif partitions[i].error_code == ErrorCode.out_of_order_sequence_number:
            # From the state the store agrees with: the producer must bump its
            # epoch or fail, worth an operator's eye.
            answer = partitions[i]
            log.warning("produce to %s-%d refused: %s", name, answer.index, answer.error_message)
    for partitions, i, flushed in flushes:
        try:
            await flushed
        except Exception as e:  # the flush's KafkaError, or anything else that stopped it
            # In cluster mode a commit refused by the store is NOT_LEADER_OR_FOLLOWER
            # (the store writer logs why), one whose outcome is unknown
            # REQUEST_TIMED_OUT (possibly written); a failed fsync is storage error.
            if isinstance(e, WriteInDoubt):
                error = ErrorCode.request_timed_out
            elif isinstance(e, KafkaError):
                error = e.error_code
            else:
                error = ErrorCode.kafka_storage_error
            if broker.cluster is None:
                log.error("produce to partition %d not acknowledged: %s", partitions[i].index, e)
            partitions[i] = _failed(partitions[i].index, error, str(e))
    if request.acks == 0:
        return None
    topics = tuple(
        TopicProduceResponse(name=topic.name, partition_responses=tuple(partitions))
        for topic, partitions in zip(request.topic_data, responses, strict=True)
    )
    return ProduceResponse(responses=topics, throttle_time=NO_THROTTLE)


# What a leader answers from the producer state it keeps in memory: in a
# cluster, a broker whose partition moved (before its next read of the store
# shows it) would answer them from a state the new leader has moved past, and
# OUT_OF_ORDER_SEQUENCE_NUMBER is fatal for an idempotent producer.
_PRODUCER_STATE_ERRORS = frozenset(
    {
        ErrorCode.out_of_order_sequence_number,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.unknown_producer_id,
        ErrorCode.invalid_txn_state,
    }
)


async def _verify(
    broker: BrokerApi, transactional_id: str, request: ProduceRequest
) -> dict[tuple[str, int], ErrorCode]:
    """Ask the coordinator about the partitions where a transaction starts now."""
    assert broker.transactions is not None
    refused: dict[tuple[str, int], ErrorCode] = {}
    for topic in request.topic_data:
        for data in topic.partition_data:
            records = data.records
            if not records or len(records) < HEADER_SIZE:
                continue  # refused by the append
            header = read_header(records)
            if not header.is_transactional or header.producer_id < 0:
                continue
            try:
                plog = broker.partitions.log(topic.name, data.index)
            except KafkaError:
                continue  # refused by the append
            if plog.producers.in_transaction(header.producer_id):
                continue
            error = await broker.transactions.verify(
                transactional_id,
                header.producer_id,
                header.producer_epoch,
                topic.name,
                data.index,
            )
            if error != ErrorCode.none:
                refused[(topic.name, data.index)] = _UNVERIFIED.get(error, error)
    return refused


# A coordinator that cannot answer yet: the producer retries, as Kafka tells it.
_UNVERIFIED = dict.fromkeys(
    (
        ErrorCode.concurrent_transactions,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
    ),
    ErrorCode.not_enough_replicas,
)


async def _recompress_off_loop(
    broker: BrokerApi, topic: str, partition: int, records: bytes | bytearray | memoryview
) -> bytes | bytearray | memoryview:
    """For a topic whose compression.type names a codec, a payload that may
    take long to rebuild in it is rebuilt on a worker thread, so that the loop
    does not stall: a big one, or a compressed one (a few kilobytes may
    decompress to many megabytes)."""
    try:
        config = broker.partitions.log(topic, partition).config
    except KafkaError:
        return records  # the append answers for it
    if config.recompress is None or not needs_worker(records):
        return records
    return await asyncio.to_thread(recompressed_payload, records, config)


def _append(
    broker: BrokerApi,
    topic: str,
    partition: int,
    records: bytes | bytearray | memoryview | None,
    now: int,
    received: int,
) -> tuple[PartitionProduceResponse, asyncio.Future[None] | None]:
    """Append one partition's records (``received`` bytes as the producer sent
    them); the future, if any, is the fsync to wait for."""
    try:
        if topic in INTERNAL_TOPICS:
            raise KafkaError(
                ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {topic}"
            )
        plog = broker.partitions.log(topic, partition)
        if broker.faults.active and (error := broker.faults.append_error_for(topic)):
            raise KafkaError(error, f"Append to {topic}-{partition} failed (fault injected)")
        if not records:
            raise KafkaError(ErrorCode.corrupt_message, "Produce request without records")
        result = plog.append(records, now)
    except RecordsRejected as e:
        return _failed(partition, e.error_code, e.message, e.record_errors), None
    except KafkaError as e:
        return _failed(partition, e.error_code, e.message), None
    flushed = broker.partitions.appended(topic, partition, plog)
    if not result.duplicate:
        broker.stats.produced(topic, received, result.last_offset - result.base_offset + 1)
    append_time = (
        None
        if result.log_append_time < 0
        else cast(
            TZAware,
            datetime.datetime.fromtimestamp(result.log_append_time / 1000, datetime.UTC),
        )
    )
    response = PartitionProduceResponse(
        index=i32(partition),
        error_code=ErrorCode.none,
        base_offset=i64(result.base_offset),
        log_append_time=append_time,
        log_start_offset=i64(result.log_start_offset),
        record_errors=(),
        error_message=None,
    )
    return response, flushed


def _failed(
    partition: int,
    error: ErrorCode,
    message: str | None,
    record_errors: tuple[tuple[int, str], ...] = (),
) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=i32(partition),
        error_code=error,
        base_offset=i64(-1),
        log_append_time=None,
        log_start_offset=i64(-1),
        record_errors=tuple(
            BatchIndexAndErrorMessage(batch_index=i32(index), batch_index_error_message=why)
            for index, why in record_errors
        ),
        error_message=message,
    )
