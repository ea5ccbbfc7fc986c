"""How a share-partition leader (and the group coordinator) reach the share
coordinator: Kafka's DefaultStatePersister, for one key at a time.

The coordinator of a key is the leader of its ``__share_group_state``
partition. When that is this broker the call goes in process, through the
very runtime that serves the wire APIs; otherwise it is sent to that broker
(PeerBrokers, the inter-broker listener). Answers that say "not here, not
yet" (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, a network error or timeout) are retried with a
growing backoff, the coordinator looked up again each time, until
``request.timeout.ms`` has passed; the last answer is then returned.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.runtime.context import RequestContext
from kgroups.share_coordinator.answers import KeyAnswer, refused
from kgroups.share_partitions.manager import PartitionKey as Key

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.peer_brokers import PeerBrokers
    from kgroups.runtime.share_coordinator_runtime import KeyHandler, ShareCoordinatorRuntime
    from kgroups.share_partitions.state_records import StateBatch

log = logging.getLogger(__name__)

_RETRIED = frozenset(
    {
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.network_exception,
        ErrorCode.request_timed_out,
        # A topic created on another broker may not be known here yet.
        ErrorCode.unknown_topic_or_partition,
    }
)
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 1.0


class SharePersister:
    def __init__(
        self,
        broker: BrokerCore,
        runtime: ShareCoordinatorRuntime,
        peers: Callable[[], PeerBrokers | None],
    ) -> None:
        self._broker = broker
        self._runtime = runtime
        self._peers = peers
        self._timeout_s = broker.config.get_int("request.timeout.ms") / 1000

    async def read(self, key: Key, leader_epoch: int) -> KeyAnswer:
        return await self._call(
            key,
            apis.READ_SHARE_GROUP_STATE,
            lambda shard, c, now: shard.read(key, leader_epoch, c, now),
            lambda: _read_request(key, leader_epoch),
        )

    async def write(
        self,
        key: Key,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
    ) -> KeyAnswer:
        return await self._call(
            key,
            apis.WRITE_SHARE_GROUP_STATE,
            lambda shard, c, now: shard.write(
                key, state_epoch, leader_epoch, start_offset, batches, c, now
            ),
            lambda: _write_request(key, state_epoch, leader_epoch, start_offset, batches),
        )

    async def initialize(self, key: Key, state_epoch: int, start_offset: int) -> KeyAnswer:
        return await self._call(
            key,
            apis.INITIALIZE_SHARE_GROUP_STATE,
            lambda shard, c, now: shard.initialize(key, state_epoch, start_offset, c, now),
            lambda: _initialize_request(key, state_epoch, start_offset),
        )

    async def delete(self, key: Key) -> KeyAnswer:
        return await self._call(
            key,
            apis.DELETE_SHARE_GROUP_STATE,
            lambda shard, c, now: shard.delete(key, c, now),
            lambda: _delete_request(key),
        )

    async def summary(self, key: Key) -> KeyAnswer:
        return await self._call(
            key,
            apis.READ_SHARE_GROUP_STATE_SUMMARY,
            lambda shard, c, now: shard.summary(key, c, now),
            lambda: _summary_request(key),
        )

    async def _call(
        self, key: Key, api_key: int, handler: KeyHandler, request: Callable[[], Any]
    ) -> KeyAnswer:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        backoff = _FIRST_BACKOFF_S
        while True:
            answer = await self._call_once(key, api_key, handler, request)
            if answer.error not in _RETRIED or loop.time() + backoff > deadline:
                return answer
            if self._broker.closing:
                return answer
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_S)

    async def _call_once(
        self, key: Key, api_key: int, handler: KeyHandler, request: Callable[[], Any]
    ) -> KeyAnswer:
        runtime = self._runtime
        try:
            runtime.ensure_topic()
            coordinator = runtime.coordinator_of(runtime.partition_for(key))
        except KafkaError as e:  # the topic could not be made (the store is away)
            return refused(e.error_code)
        if coordinator < 0:
            return refused(ErrorCode.coordinator_not_available)
        if coordinator == self._broker.broker_id:
            return await runtime.call(key, self._context(api_key), handler)
        return await self._send(coordinator, api_key, request())

    def _context(self, api_key: int) -> RequestContext:
        version = (
            1
            if api_key in (apis.WRITE_SHARE_GROUP_STATE, apis.READ_SHARE_GROUP_STATE_SUMMARY)
            else 0
        )
        return RequestContext(
            api_key=api_key,
            api_version=version,
            correlation_id=0,
            client_id=f"broker-{self._broker.broker_id}",
            client_host="",
        )

    async def _send(self, broker_id: int, api_key: int, request: Any) -> KeyAnswer:
        peers = self._peers()
        if peers is None:
            return refused(ErrorCode.coordinator_not_available)
        highest = (
            1
            if api_key in (apis.WRITE_SHARE_GROUP_STATE, apis.READ_SHARE_GROUP_STATE_SUMMARY)
            else 0
        )
        try:
            response = await peers.send(broker_id, request, 0, highest)
        except KafkaError as e:
            return refused(e.error_code)
        return _answer_of(response)


def _answer_of(response: Any) -> KeyAnswer:
    """The one partition's answer of a share-state response."""
    from kgroups.share_partitions.state_records import StateBatch

    for result in response.results:
        for p in result.partitions:
            return KeyAnswer(
                error=ErrorCode(p.error_code),
                message=p.error_message,
                state_epoch=int(getattr(p, "state_epoch", 0)),
                leader_epoch=int(getattr(p, "leader_epoch", 0)),
                start_offset=int(getattr(p, "start_offset", 0)),
                state_batches=tuple(
                    StateBatch(
                        int(b.first_offset),
                        int(b.last_offset),
                        int(b.delivery_state),
                        int(b.delivery_count),
                    )
                    for b in getattr(p, "state_batches", ())
                ),
                delivery_complete_count=int(getattr(p, "delivery_complete_count", -1)),
            )
    return refused(ErrorCode.unknown_server_error)


def _read_request(key: Key, leader_epoch: int) -> Any:
    from kio.schema.read_share_group_state.v0 import ReadShareGroupStateRequest
    from kio.schema.read_share_group_state.v0.request import PartitionData, ReadStateData
    from kio.static.primitive import i32

    return ReadShareGroupStateRequest(
        group_id=key[0],
        topics=(
            ReadStateData(
                topic_id=key[1],
                partitions=(PartitionData(partition=i32(key[2]), leader_epoch=i32(leader_epoch)),),
            ),
        ),
    )


def _write_request(
    key: Key,
    state_epoch: int,
    leader_epoch: int,
    start_offset: int,
    batches: tuple[StateBatch, ...],
) -> Any:
    from kio.schema.write_share_group_state.v1 import WriteShareGroupStateRequest
    from kio.schema.write_share_group_state.v1 import request as wire
    from kio.static.primitive import i8, i16, i32, i64

    return WriteShareGroupStateRequest(
        group_id=key[0],
        topics=(
            wire.WriteStateData(
                topic_id=key[1],
                partitions=(
                    wire.PartitionData(
                        partition=i32(key[2]),
                        state_epoch=i32(state_epoch),
                        leader_epoch=i32(leader_epoch),
                        start_offset=i64(start_offset),
                        state_batches=tuple(
                            wire.StateBatch(
                                first_offset=i64(b.first_offset),
                                last_offset=i64(b.last_offset),
                                delivery_state=i8(b.delivery_state),
                                delivery_count=i16(b.delivery_count),
                            )
                            for b in batches
                        ),
                    ),
                ),
            ),
        ),
    )


def _initialize_request(key: Key, state_epoch: int, start_offset: int) -> Any:
    from kio.schema.initialize_share_group_state.v0 import InitializeShareGroupStateRequest
    from kio.schema.initialize_share_group_state.v0 import request as wire
    from kio.static.primitive import i32, i64

    return InitializeShareGroupStateRequest(
        group_id=key[0],
        topics=(
            wire.InitializeStateData(
                topic_id=key[1],
                partitions=(
                    wire.PartitionData(
                        partition=i32(key[2]),
                        state_epoch=i32(state_epoch),
                        start_offset=i64(start_offset),
                    ),
                ),
            ),
        ),
    )


def _delete_request(key: Key) -> Any:
    from kio.schema.delete_share_group_state.v0 import DeleteShareGroupStateRequest
    from kio.schema.delete_share_group_state.v0 import request as wire
    from kio.static.primitive import i32

    return DeleteShareGroupStateRequest(
        group_id=key[0],
        topics=(
            wire.DeleteStateData(
                topic_id=key[1], partitions=(wire.PartitionData(partition=i32(key[2])),)
            ),
        ),
    )


def _summary_request(key: Key) -> Any:
    from kio.schema.read_share_group_state_summary.v1 import ReadShareGroupStateSummaryRequest
    from kio.schema.read_share_group_state_summary.v1 import request as wire
    from kio.static.primitive import i32

    return ReadShareGroupStateSummaryRequest(
        group_id=key[0],
        topics=(
            wire.ReadStateSummaryData(
                topic_id=key[1],
                partitions=(wire.PartitionData(partition=i32(key[2]), leader_epoch=i32(0)),),
            ),
        ),
    )
