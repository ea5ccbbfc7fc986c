"""The IO shell around the sans-IO group coordinator.

One `GroupCoordinatorShard` per `__consumer_offsets` partition. For each
request the runtime picks the group's shard, calls the handler with the
current time and a future to answer through, appends the records the shard
returns to the shard's partition, waits until they are durable, and only then
completes the futures the shard replied to, telling the shard the batch is
durable. A failed append (or fsync) is handed back to the shard, which rolls
it back and answers with the error instead. Each shard's earliest timer
is one loop timer; firing it feeds the result through the same path.

Loading: at start every existing `__consumer_offsets` partition is replayed
into a fresh shard in the background; until its shard is loaded a group's
requests get COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kgroups.cluster.placement import OFFSETS_TOPIC, partition_for_group
from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.coordinator.result import Result
from kgroups.coordinator.shard import GroupCoordinatorShard
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.server.pending_writes import (
    EVERYTHING,
    PendingWrites,
    Reach,
    Reply,
    StateKey,
    request_reach,
    written,
)
from kgroups.storage.records import encode_batch, iter_batches, iter_key_values

if TYPE_CHECKING:
    from kgroups.server.broker import Broker
    from kgroups.server.context import RequestContext

log = logging.getLogger(__name__)

T = TypeVar("T")
# Records read per step while loading, between which the loop serves requests.
_LOAD_CHUNK_BYTES = 4 * 1024 * 1024
_PROGRESS_EVERY_S = 2.0

# A reply given up on: its records were not durable within offsets.commit.timeout.ms.
TIMED_OUT = object()
# What a request that timed out is answered, as Kafka answers it: a commit
# whose append timed out, a SyncGroup whose assignment did not get stored;
# anything else sends the client looking for its coordinator again.
_TIMEOUT_ERRORS = {
    apis.OFFSET_COMMIT: ErrorCode.request_timed_out,
    apis.SYNC_GROUP: ErrorCode.rebalance_in_progress,
}


class CoordinatorRuntime:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        cfg = broker.config
        self.config = CoordinatorConfig(
            min_session_timeout_ms=cfg.get_int("group.min.session.timeout.ms"),
            max_session_timeout_ms=cfg.get_int("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=cfg.get_int("group.initial.rebalance.delay.ms"),
            max_size=cfg.get_int("group.max.size"),
            offsets_topic_partitions=cfg.get_int("offsets.topic.num.partitions"),
            offset_metadata_max_bytes=cfg.get_int("offset.metadata.max.bytes"),
            offsets_retention_ms=cfg.get_int("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=cfg.get_int("offsets.retention.check.interval.ms"),
        )
        self.partitions = self.config.offsets_topic_partitions
        self._commit_timeout_s = cfg.get_int("offsets.commit.timeout.ms") / 1000
        self._shards: dict[int, GroupCoordinatorShard] = {}
        self._loading: set[int] = set()
        self._timers: dict[int, asyncio.TimerHandle] = {}
        # Partitions whose load failed: their groups cannot be served.
        self._failed: set[int] = set()
        # Topics deleted while partitions were loading: their offsets go once loaded.
        self._deleted_while_loading: set[str] = set()
        # Per partition, the writes whose replies wait for them to be durable.
        self._pending: dict[int, PendingWrites] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # The tasks of results waiting for their records to be durable.
        self._settling: set[asyncio.Task[Any]] = set()

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        topic = self._broker.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        self.partitions = topic.partitions
        for p in range(topic.partitions):
            self._loading.add(p)
        self._spawn(self._load_all(topic.partitions))

    async def stop(self) -> None:
        """Answer parked requests (NOT_COORDINATOR: clients look for the
        coordinator again), then stop timers and loading."""
        now = self._broker.clock.now_ms()
        for shard in self._shards.values():
            self._reply(shard.unload(now))
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._settling:
            # Appends waiting for their fsync get the time a request would.
            await asyncio.wait(set(self._settling), timeout=self._commit_timeout_s)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator task failed", exc_info=task.exception())

    def ensure_offsets_topic(self) -> None:
        """Create `__consumer_offsets` on first use, with an empty, loaded shard per partition."""
        if self._broker.topics.get(OFFSETS_TOPIC) is not None:
            return
        cfg = self._broker.config
        self._broker.create_topic(
            OFFSETS_TOPIC,
            self.partitions,
            {
                "cleanup.policy": "compact",
                "segment.bytes": str(cfg.get_int("offsets.topic.segment.bytes")),
            },
        )
        for p in range(self.partitions):
            self._shards[p] = self._new_shard(p)

    def _new_shard(self, partition: int) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(
            partition, self.config, partition_exists=self._broker.topics.partition_exists
        )

    # -- loading -----------------------------------------------------------

    async def _load_all(self, partitions: int) -> None:
        for p in range(partitions):
            try:
                await self._load(p)
            except asyncio.CancelledError:
                raise
            except Exception:
                # Serving the partition's groups from a partial load would hand
                # out wrong offsets; its groups get COORDINATOR_NOT_AVAILABLE.
                log.exception("loading %s-%d failed; its groups are unavailable", OFFSETS_TOPIC, p)
                self._loading.discard(p)
                self._failed.add(p)

    async def _load(self, partition: int) -> None:
        """Rebuild the partition's shard from its log.

        Only the newest record of each key matters (that is what compaction
        keeps), so the scan keeps the last value per key and replays just those,
        in the order of their last appearance: the same records a fully
        compacted log would hold. Loading costs a key scan per record and a
        replay per live key.
        """
        started = time.monotonic()
        shard = self._new_shard(partition)
        plog = self._broker.log(OFFSETS_TOPIC, partition)
        offset, end = plog.log_start_offset, plog.log_end_offset
        latest: dict[bytes, bytes | None] = {}
        scanned = 0
        next_report = started + _PROGRESS_EVERY_S
        while offset < end:
            chunk = plog.read(offset, _LOAD_CHUNK_BYTES, max_offset=end)
            if not chunk:
                break
            for pos, header in iter_batches(chunk):
                if header.last_offset >= offset:
                    for key, value in iter_key_values(chunk[pos : pos + header.size]):
                        if key is not None:
                            latest.pop(key, None)
                            latest[key] = value
                            scanned += 1
                offset = header.last_offset + 1
            if time.monotonic() >= next_report:
                next_report += _PROGRESS_EVERY_S
                done = (offset - plog.log_start_offset) / max(1, end - plog.log_start_offset)
                log.info(
                    "loading %s-%d: %.0f%% (%d records, %d live keys)",
                    OFFSETS_TOPIC,
                    partition,
                    100 * done,
                    scanned,
                    len(latest),
                )
            await asyncio.sleep(0)  # serve other partitions' requests between chunks
        for key, value in latest.items():
            shard.replay(key, value)
        self._shards[partition] = shard
        self._loading.discard(partition)
        now = self._broker.clock.now_ms()
        self._submit(partition, shard.finish_load(now))
        if self._deleted_while_loading:
            self._submit(partition, shard.on_topics_deleted(self._deleted_while_loading, now))
            if not self._loading:
                self._deleted_while_loading.clear()
        if scanned:
            log.info(
                "loaded %s-%d: %d records, %d live keys, %d group(s) in %.3f s",
                OFFSETS_TOPIC,
                partition,
                scanned,
                len(latest),
                sum(1 for _ in shard.groups()),
                time.monotonic() - started,
            )

    def on_topic_deleted(self, topic: str) -> None:
        """Every group forgets the deleted topic's offsets, with tombstones."""
        now = self._broker.clock.now_ms()
        for partition, shard in self._shards.items():
            self._submit(partition, shard.on_topics_deleted((topic,), now))
        if self._loading:
            self._deleted_while_loading.add(topic)

    # -- requests ----------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        self.ensure_offsets_topic()
        return partition_for_group(group_id, self.partitions)

    def shard(self, partition: int) -> GroupCoordinatorShard:
        if partition in self._loading:
            raise KafkaError(ErrorCode.coordinator_load_in_progress)
        if partition in self._failed:
            raise KafkaError(ErrorCode.coordinator_not_available)
        shard = self._shards.get(partition)
        if shard is None:
            raise KafkaError(ErrorCode.not_coordinator)
        return shard

    async def call(
        self,
        group_id: str,
        ctx: RequestContext,
        handler: Callable[[GroupCoordinatorShard, CoordinatorContext, int], Result],
    ) -> Any:
        """Run one handler on the group's shard; the response once it is due."""
        reach = request_reach(group_id, ctx.api_key)
        return await self.call_partition(self.partition_for(group_id), ctx, handler, reach)

    async def call_partition(
        self,
        partition: int,
        ctx: RequestContext,
        handler: Callable[[GroupCoordinatorShard, CoordinatorContext, int], Result],
        reach: Reach = EVERYTHING,
    ) -> Any:
        """Run one handler on a shard; ``reach`` is the state its answer reveals."""
        shard = self.shard(partition)
        reply = Reply(reach)
        context = CoordinatorContext(
            api_version=ctx.api_version,
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            reply_to=reply,
        )
        self._submit(partition, handler(shard, context, self._broker.clock.now_ms()), reach)
        response = await reply
        if response is TIMED_OUT:
            raise KafkaError(_TIMEOUT_ERRORS.get(ctx.api_key, ErrorCode.coordinator_not_available))
        return response

    @property
    def loading(self) -> bool:
        return bool(self._loading)

    def loaded_partitions(self) -> list[int]:
        return [p for p in sorted(self._shards) if p not in self._loading]

    def _submit(self, partition: int, result: Result, reach: Reach = ()) -> None:
        """Append the result's records now, then reply once they are durable.

        Appending at once, never from a task, keeps the log in the order the
        shard applied its changes: a timer's records cannot fall behind a
        commit handled later in the same loop turn. Replies also wait for the
        pending writes of the state they reveal (``reach``, the reach of each
        request answered, the records' own groups; see pending_writes.py), so
        a follower's SyncGroup answered after the leader's still waits for the
        leader's assignment to be stored. Every wait for a reply ends after
        ``offsets.commit.timeout.ms``.
        """
        pending = self._pending.setdefault(partition, PendingWrites())
        durable: asyncio.Future[None] | None = None
        stored = False
        if result.records:
            try:
                durable = self._write(partition, result.records)
                stored = True
                if durable is None:
                    self._shards[partition].append_durable(result.append_token)
            except KafkaError as e:
                result = self._shards[partition].append_failed(
                    result.append_token, e.error_code, self._broker.clock.now_ms()
                )
        self._schedule(partition)
        if durable is None and not pending:
            self._reply(result)
            return
        writes = written(result.records) if stored else set()
        waits_for = pending.before(_result_reach(result, reach, writes))
        if durable is None and not waits_for:
            self._reply(result)
            return
        settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending.add(writes, settled)
        task = self._spawn(self._settle(partition, result, durable, waits_for, writes, settled))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _settle(
        self,
        partition: int,
        result: Result,
        durable: asyncio.Future[None] | None,
        waits_for: list[asyncio.Future[None]],
        writes: set[StateKey],
        settled: asyncio.Future[None],
    ) -> None:
        """Reply once the result's records and the writes it waits for are durable.

        ``settled`` completes only then (or when the append failed), however
        long that takes, so later results keep waiting for durability; only
        their replies give up, at their own timeout.
        """
        loop = asyncio.get_running_loop()
        timeout = loop.call_later(self._commit_timeout_s, _time_out, result)
        try:
            if durable is not None:
                try:
                    await durable
                    self._shards[partition].append_durable(result.append_token)
                except Exception as e:
                    log.error("fsync of %s-%d failed: %s", OFFSETS_TOPIC, partition, e)
                    result = self._shards[partition].append_failed(
                        result.append_token,
                        ErrorCode.kafka_storage_error,
                        self._broker.clock.now_ms(),
                    )
            for write in waits_for:
                await write
            self._reply(result)
        finally:
            timeout.cancel()
            _time_out(result)  # cancelled at shutdown: no reply waits forever
            self._pending[partition].settled(writes, settled)
            settled.set_result(None)

    def _write(
        self, partition: int, records: list[tuple[bytes, bytes | None]]
    ) -> asyncio.Future[None] | None:
        """Append one batch now; the returned future completes once it is fsynced
        (None when the flush policy asks for no fsync)."""
        broker = self._broker
        plog = broker.log(OFFSETS_TOPIC, partition)
        now = broker.clock.now_ms()
        batch = encode_batch([(key, value, (), now) for key, value in records])
        try:
            plog.append_batch(batch, now)
        except OSError as e:
            log.error("append to %s-%d failed: %s", OFFSETS_TOPIC, partition, e)
            raise KafkaError(ErrorCode.kafka_storage_error, str(e)) from None
        return broker.appended(OFFSETS_TOPIC, partition, plog)

    @staticmethod
    def _reply(result: Result) -> None:
        for token, response in result.replies:
            assert isinstance(token, asyncio.Future)
            if not token.done():
                token.set_result(response)

    # -- timers ------------------------------------------------------------

    def _schedule(self, partition: int) -> None:
        shard = self._shards.get(partition)
        old = self._timers.pop(partition, None)
        if old is not None:
            old.cancel()
        if shard is None:
            return
        deadline = shard.next_deadline_ms()
        if deadline is None:
            return
        delay = max(0.0, (deadline - self._broker.clock.now_ms()) / 1000)
        loop = asyncio.get_running_loop()
        self._timers[partition] = loop.call_later(delay, self._fire, partition)

    def _fire(self, partition: int) -> None:
        self._timers.pop(partition, None)
        shard = self._shards.get(partition)
        if shard is None:
            return
        self._submit(partition, shard.on_timer(self._broker.clock.now_ms()))


def _result_reach(result: Result, reach: Reach, writes: set[StateKey]) -> Reach:
    """All the state a result's replies reveal."""
    if reach is EVERYTHING:
        return EVERYTHING
    keys = writes.union(reach)
    for token, _response in result.replies:
        if not isinstance(token, Reply) or token.reach is EVERYTHING:
            return EVERYTHING
        keys.update(token.reach)
    return tuple(keys)


def _time_out(result: Result) -> None:
    """The result's records are still not durable: its waiting replies give up."""
    for token, _response in result.replies:
        assert isinstance(token, asyncio.Future)
        if not token.done():
            token.set_result(TIMED_OUT)
