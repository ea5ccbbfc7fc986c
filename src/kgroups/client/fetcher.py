"""Fetching records ahead of poll() (the Java client's Fetcher).

One task per broker keeps a Fetch request in flight on a connection of its own
for the assigned, unpaused partitions that broker leads: as soon as a response
arrives the next request goes out, while poll() decodes what came before. A
partition is fetched ahead from where its buffered data ends, at most two
responses deep, which bounds memory at about twice max.partition.fetch.bytes
per partition.

Fetched data belongs to the partition's seek epoch: after a seek, a reset or a
revocation, data in flight or buffered for the old position is dropped. Errors
that mean the metadata is stale (leader moved, unknown partition) flag a
metadata refresh; an out-of-range position asks for a reset per
auto.offset.reset; anything else is kept and raised from the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

from kgroups.client.cluster import ClusterClient
from kgroups.client.completed_fetch import CompletedFetch
from kgroups.client.consumer_config import ConsumerConfig
from kgroups.client.consumer_record import ConsumerRecord, TopicPartition
from kgroups.client.coordinator_link import Connect
from kgroups.client.exceptions import NoOffsetForPartitionError
from kgroups.client.fetch_request import FetchRequests
from kgroups.client.subscription_state import NONE, SubscriptionState
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["Fetcher"]

log = logging.getLogger(__name__)

_PREFETCH_DEPTH = 2
_STALE_METADATA = (
    ErrorCode.not_leader_or_follower,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.leader_not_available,
    ErrorCode.fenced_leader_epoch,
    ErrorCode.unknown_leader_epoch,
    ErrorCode.kafka_storage_error,
    ErrorCode.replica_not_available,
    ErrorCode.offset_not_available,
    ErrorCode.unknown_topic_id,
)


class _NodeFetcher:
    def __init__(self) -> None:
        self.wakeup = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.conn: Any = None


class Fetcher:
    def __init__(
        self,
        config: ConsumerConfig,
        subscriptions: SubscriptionState,
        cluster: ClusterClient,
        connect: Connect,
    ) -> None:
        self.config = config
        self.subscriptions = subscriptions
        self.cluster = cluster
        self._connect = connect
        self._requests = FetchRequests(config)
        self.read_committed = self._requests.read_committed
        self._buffers: dict[TopicPartition, deque[CompletedFetch]] = {}
        self._in_flight: set[TopicPartition] = set()
        self._nodes: dict[int, _NodeFetcher] = {}
        self.data_ready = asyncio.Event()
        self.metadata_stale = False
        self._errors: list[Exception] = []
        self._closed = False
        self._rotation = 0

    # -- driving -------------------------------------------------------------

    def kick(self) -> None:
        """Start or wake the fetch task of every broker that leads a fetchable
        partition; called from poll() and after anything that changes what to fetch."""
        if self._closed:
            return
        leaders: set[int] = set()
        for tp in self.subscriptions.fetchable_partitions():
            leader = self.cluster.leader_id(*tp)
            if leader is None:
                self.metadata_stale = True
            else:
                leaders.add(leader)
        for node_id in leaders:
            node = self._nodes.get(node_id)
            if node is None:
                node = self._nodes[node_id] = _NodeFetcher()
            if node.task is None or node.task.done():
                node.task = asyncio.get_running_loop().create_task(self._run(node_id, node))
            node.wakeup.set()

    def _partitions_for(self, node_id: int) -> list[TopicPartition]:
        out = []
        for tp in self.subscriptions.fetchable_partitions():
            if tp in self._in_flight or self.cluster.leader_id(*tp) != node_id:
                continue
            buffered = self._buffers.get(tp)
            if buffered and len(buffered) >= _PREFETCH_DEPTH:
                continue
            out.append(tp)
        return out

    def _fetch_offset(self, tp: TopicPartition) -> tuple[int, int]:
        """(epoch, offset) to fetch from: past the buffered data, else the position."""
        state = self.subscriptions.state(tp)
        buffered = self._buffers.get(tp)
        if buffered and buffered[-1].epoch == state.epoch:
            return state.epoch, buffered[-1].next_fetch_offset
        assert state.position is not None
        return state.epoch, state.position

    async def _run(self, node_id: int, node: _NodeFetcher) -> None:
        while not self._closed:
            partitions = self._partitions_for(node_id)
            if not partitions:
                node.wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(node.wakeup.wait(), 1.0)
                continue
            plan = {tp: self._fetch_offset(tp) for tp in partitions}
            self._in_flight.update(plan)
            try:
                response = await self._send(node_id, node, plan)
            except OSError as e:
                log.info("fetch from broker %s failed: %r", node_id, e)
                if node.conn is not None:
                    await node.conn.close()
                    node.conn = None
                self.metadata_stale = True
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                continue
            finally:
                self._in_flight.difference_update(plan)
            self._handle(response, plan)

    async def _send(
        self, node_id: int, node: _NodeFetcher, plan: dict[TopicPartition, tuple[int, int]]
    ) -> Any:
        if node.conn is None or node.conn.closed:
            address = self.cluster.address(node_id)
            if address is None:
                raise ConnectionError(f"broker {node_id} is not in the metadata")
            node.conn = await asyncio.wait_for(
                self._connect(*address), self.config.request_timeout_ms / 1000
            )
        request = self._requests.request({tp: offset for tp, (_epoch, offset) in plan.items()})
        version = node.conn.version_for(apis.FETCH, 4, 12)
        return await asyncio.wait_for(
            node.conn.send(request, version=version), self._requests.timeout
        )

    def _handle(self, response: Any, plan: dict[TopicPartition, tuple[int, int]]) -> None:
        if response.error_code != ErrorCode.none:
            self.metadata_stale = True
            return
        arrived = False
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition_index)
                sent = plan.get(tp)
                if sent is None or not self.subscriptions.is_assigned(tp):
                    continue
                state = self.subscriptions.state(tp)
                epoch, offset = sent
                if state.epoch != epoch:
                    continue  # a seek or reset made this data stale
                error = p.error_code
                if error == ErrorCode.none:
                    state.high_watermark = p.high_watermark
                    state.last_stable_offset = p.last_stable_offset
                    state.log_start_offset = p.log_start_offset
                    if p.records:
                        try:
                            fetched = CompletedFetch(
                                tp,
                                bytes(p.records),
                                fetch_offset=offset,
                                epoch=epoch,
                                aborted_transactions=p.aborted_transactions,
                                read_committed=self.read_committed,
                                check_crcs=self.config.check_crcs,
                            )
                        except KafkaError as e:  # unreadable batch headers
                            self._errors.append(e)
                            arrived = True
                            continue
                        if fetched.has_batches:
                            self._buffers.setdefault(tp, deque()).append(fetched)
                            arrived = True
                elif error == ErrorCode.offset_out_of_range:
                    self._out_of_range(tp, offset)
                elif error in _STALE_METADATA:
                    log.debug("fetch of %s: %s; refreshing metadata", tp, error.name)
                    self.metadata_stale = True
                else:
                    self._errors.append(KafkaError(error, f"fetching {tp.topic}-{tp.partition}"))
                    arrived = True
        if arrived:
            self.data_ready.set()

    def _out_of_range(self, tp: TopicPartition, offset: int) -> None:
        state = self.subscriptions.state(tp)
        if state.position != offset:
            return  # only a prefetch went too far; the position itself is fine
        if self.subscriptions.default_reset_strategy == NONE:
            self._errors.append(NoOffsetForPartitionError([tp]))
            self.data_ready.set()
            return
        log.info("position %s of %s is out of range; resetting", offset, tp)
        self.subscriptions.request_reset([tp])

    # -- handing out ---------------------------------------------------------

    def raise_errors(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def collect(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, advancing positions past them."""
        out: list[ConsumerRecord] = []
        partitions = list(self._buffers)
        if not partitions:
            return out
        self._rotation = (self._rotation + 1) % len(partitions)
        consumed_any = False
        for tp in partitions[self._rotation :] + partitions[: self._rotation]:
            buffered = self._buffers[tp]
            if not self.subscriptions.is_assigned(tp):
                del self._buffers[tp]
                continue
            state = self.subscriptions.state(tp)
            if state.paused or state.pending_revocation:
                continue
            while buffered and len(out) < max_records:
                fetched = buffered[0]
                if fetched.epoch != state.epoch or state.position is None:
                    buffered.popleft()
                    consumed_any = True
                    continue
                records, position = fetched.take(state.position, max_records - len(out))
                self.subscriptions.advance(tp, position)
                out.extend(records)
                if fetched.exhausted:
                    buffered.popleft()
                    consumed_any = True
            if not buffered:
                del self._buffers[tp]
            if len(out) >= max_records:
                break
        if consumed_any:
            self.kick()
        if not self._buffers and not self._errors:
            self.data_ready.clear()
        return out

    def has_buffered(self) -> bool:
        return bool(self._errors) or any(
            not self.subscriptions.state(tp).paused
            for tp in self._buffers
            if self.subscriptions.is_assigned(tp)
        )

    def drop(self, partitions: set[TopicPartition] | None = None) -> None:
        """Forget buffered data (of some partitions, or all)."""
        for tp in list(self._buffers):
            if partitions is None or tp in partitions:
                del self._buffers[tp]

    async def close(self) -> None:
        self._closed = True
        for node in self._nodes.values():
            if node.task is not None:
                node.task.cancel()
                with contextlib.suppress(BaseException):
                    await node.task
            if node.conn is not None:
                await node.conn.close()
        self._nodes.clear()
