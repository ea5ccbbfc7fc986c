"""The IO shell around the sans-IO coordinators.

``ShardRuntime`` hosts one shard per partition of an internal topic, each with
a `CoordinatorDriver` that holds the shell's contract (order of appends,
durable-then-reply, failed appends, timers, the commit timeout). The broker
runs two: ``CoordinatorRuntime`` (coordinator_runtime.py: a
GroupCoordinatorShard per `__consumer_offsets` partition) and
``TransactionRuntime`` (transaction_runtime.py: a TransactionCoordinatorShard
per `__transaction_state` partition). For each request the runtime picks the
shard, calls the handler with the current time and a future to answer
through, and hands the result to the driver; then it does what the driver
asks: append batches to the partition, report their fsync, complete the reply
futures, and keep one loop timer per partition at the driver's next deadline.
A failed append (or fsync) goes back to the shard, which rolls it back by
snapshot and answers with the error.

Leadership: the runtime serves the partitions it holds.
``partition_gained`` puts a fresh shard in place, loading, and replays the
partition's log into it in the background (the shard answers its groups'
requests as Kafka's loading coordinator does); ``partition_lost`` drops the
shard: its parked requests are told NOT_COORDINATOR, its timers stop, its load
is cancelled, and its appends in flight still get their answers without
touching what a later shard of the partition holds. A request for a partition
not held gets NOT_COORDINATOR, and the client looks for the coordinator again.
A single broker gains every partition at start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.coordinator.txn_load import OpenRecord
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.home import LeadershipChange
from kgroups.protocol import apis
from kgroups.runtime.append_batches import append_marker, encoded_batches
from kgroups.runtime.coordinator_driver import (
    TIMED_OUT,
    Append,
    CoordinatorDriver,
    HostedShard,
    ShardResult,
)
from kgroups.runtime.partition_scan import scan_partition
from kgroups.runtime.pending_writes import EVERYTHING, Reach
from kgroups.runtime.shard_leaders import ClusterLeaders, ShardLeaders, ThisBroker
from kgroups.task_owner import TaskOwner

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.context import RequestContext

log = logging.getLogger(__name__)

T = TypeVar("T")
S = TypeVar("S", bound=HostedShard)
# An append refused for these means the partition is not (or may no longer
# be) led here: its groups are dropped.
_LEADERSHIP_GONE = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})

# What a request that timed out is answered, as Kafka answers it: a commit
# whose append timed out, a SyncGroup whose assignment did not get stored;
# anything else sends the client looking for its coordinator again.
_TIMEOUT_ERRORS = {
    apis.OFFSET_COMMIT: ErrorCode.request_timed_out,
    apis.SYNC_GROUP: ErrorCode.rebalance_in_progress,
}


class ShardRuntime(Generic[S]):
    """Hosts one sans-IO shard per partition of ``topic``: loading, appends
    and their fsync, replies, timers. The group coordinator and the
    transaction coordinator are its two kinds (``_new_shard``, ``_load``)."""

    def __init__(
        self, broker: BrokerCore, topic: str, partitions: int, commit_timeout_ms: int
    ) -> None:
        self._broker = broker
        self.topic = topic
        self.partitions = partitions
        self._commit_timeout_ms = commit_timeout_ms
        self._shards: dict[int, S] = {}
        self._drivers: dict[int, CoordinatorDriver] = {}
        # The leader epoch at which each partition held was gained.
        self._epochs: dict[int, int] = {}
        self._loading: set[int] = set()
        self._load_tasks: dict[int, asyncio.Task[None]] = {}
        # One partition loads at a time, in the order gained.
        self._load_turn = asyncio.Lock()
        # Drivers of lost partitions whose appends still wait for their fsync.
        self._retired: set[CoordinatorDriver] = set()
        # Alone, this broker leads every partition; in a cluster it follows
        # the leadership view (partition_gained, partition_lost).
        self._gain_all = broker.partitions.leads_everything
        # Per partition, the loop timer and the deadline it is set for.
        self._timers: dict[int, tuple[int, asyncio.TimerHandle]] = {}
        # Partitions whose load failed: their groups cannot be served.
        self._failed: set[int] = set()
        # Topics deleted while partitions were loading: their offsets go once loaded.
        self._deleted_while_loading: set[str] = set()
        self._tasks = TaskOwner("coordinator", keep_failures=False)
        # The fsyncs appended batches wait for.
        self._syncing: set[asyncio.Future[None]] = set()
        # Partitions with records to append at the end of this loop turn.
        self._to_append: set[int] = set()
        self._stopped = False
        self.load_times_ms: dict[int, float] = {}
        """How long each loaded partition took to load (for metrics)."""
        # The loop, kept: asking for the running one costs a getpid per call.
        self._loop: asyncio.AbstractEventLoop | None = None
        cluster = broker.cluster
        # Where FindCoordinator sends a group or a transactional id.
        self.leaders: ShardLeaders = (
            ThisBroker(broker, self) if cluster is None else ClusterLeaders(cluster, topic)
        )
        broker.partitions.on_leadership_change(self.on_leadership_change)

    def _new_shard(self, partition: int, leader_epoch: int) -> S:
        """A fresh shard for the partition, registered with its driver."""
        raise NotImplementedError

    async def _load(self, partition: int, shard: S) -> None:
        """Replay the partition's log into the shard, then ``finish_load``."""
        raise NotImplementedError

    def _create_internal_topic(self, segment_bytes: int) -> None:
        """Create this runtime's topic on first use, compacted, with an empty
        shard per partition when a broker alone leads them all."""
        if self._broker.topics.get(self.topic) is not None:
            return
        configs = {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}
        self._broker.create_topic(self.topic, self.partitions, configs)
        if self._gain_all:
            for p in range(self.partitions):
                self._new_shard(p, 0)  # nothing to load

    def _markers_due(self, partition: int, driver: CoordinatorDriver) -> None:
        """Transaction markers whose records are durable (transaction coordinator only)."""
        driver.markers.clear()

    def _host(self, partition: int, shard: S, leader_epoch: int) -> S:
        self._shards[partition] = shard
        self._drivers[partition] = CoordinatorDriver(shard, self._commit_timeout_ms)
        self._epochs[partition] = leader_epoch
        return shard

    def start(self) -> None:
        """Alone, gain every partition of `__consumer_offsets`; in a cluster,
        the leadership view says which."""
        topic = self._broker.topics.get(self.topic)
        if topic is None:
            return
        self.partitions = topic.partitions
        if self._gain_all:
            for p in range(topic.partitions):
                self.partition_gained(p, 0)

    async def stop(self) -> None:
        """Answer parked requests (NOT_COORDINATOR: clients look for the
        coordinator again), then stop timers and loading."""
        self._append_turn()  # what this turn's results asked for
        now = self._broker.clock.now_ms()
        for shard in self._shards.values():
            _send(shard.unload(now).replies)
        for _deadline, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        if self._syncing:
            # Appends waiting for their fsync get the time a request would.
            await asyncio.wait(set(self._syncing), timeout=self._commit_timeout_ms / 1000)
        self._stopped = True
        for driver in [*self._drivers.values(), *self._retired]:
            driver.give_up()  # no reply waits forever
            _send(driver.take_replies())
        for _deadline, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        await self._tasks.close()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop

    def partition_gained(self, partition: int, leader_epoch: int) -> None:
        """This broker leads the partition at ``leader_epoch``: load its groups.

        Gaining a partition held at another epoch drops it and loads it again
        (it may have been written by another leader in between); gaining it
        again at the same epoch changes nothing.
        """
        held = self._epochs.get(partition)
        if held == leader_epoch:
            return
        if held is not None:
            self.partition_lost(partition)
        self._loading.add(partition)
        shard = self._new_shard(partition, leader_epoch)
        shard.begin_load()
        self._load_tasks[partition] = self._tasks.start(
            self._load_in_turn(partition, shard), f"load partition {partition}"
        )

    def partition_lost(self, partition: int, leader_epoch: int | None = None) -> None:
        """This broker no longer leads the partition: drop its groups.

        Parked requests are told NOT_COORDINATOR, the partition's timers stop
        and its load is cancelled. Appends already made still report: their
        requests get their answers (an error if not stored) from the dropped
        shard, which nothing else reads. ``leader_epoch``, if given, is the
        epoch that was lost: a loss older than the epoch held is ignored.
        """
        held = self._epochs.get(partition)
        if held is None or (leader_epoch is not None and leader_epoch < held):
            return
        del self._epochs[partition]
        del self._shards[partition]
        driver = self._drivers.pop(partition)
        self._loading.discard(partition)
        self._failed.discard(partition)
        self._to_append.discard(partition)
        self.load_times_ms.pop(partition, None)
        task = self._load_tasks.pop(partition, None)
        if task is not None:
            task.cancel()
        timer = self._timers.pop(partition, None)
        if timer is not None:
            timer[1].cancel()
        log.info("%s-%d moved away: its groups are dropped", self.topic, partition)
        self._retired.add(driver)
        self._retire(driver)

    def _retire(self, driver: CoordinatorDriver) -> None:
        """Settle what a dropped shard still owes: appends not yet made are
        not made (their requests are told NOT_COORDINATOR), parked requests
        are told NOT_COORDINATOR; the driver is let go once nothing waits."""
        now = self._broker.clock.now_ms()
        while driver.appends:
            appends = list(driver.appends)
            driver.appends.clear()
            for append in appends:
                driver.failed(append, ErrorCode.not_leader_or_follower, now)
        _send(driver.take_replies())
        _send(driver.shard.unload(now).replies)  # no state revealed: at once
        if not driver.waiting():
            self._retired.discard(driver)

    def on_leadership_change(self, change: LeadershipChange) -> None:
        """The cluster's leadership view changed: follow it for this runtime's topic."""
        for topic, partition in change.lost:
            if topic == self.topic:
                self.partition_lost(partition)
        for (topic, partition), epoch in change.gained.items():
            if topic == self.topic:
                self.partition_gained(partition, epoch)

    def leader_epoch(self, partition: int) -> int | None:
        """The epoch at which the partition is held, or None if it is not."""
        return self._epochs.get(partition)

    def held_partitions(self) -> list[int]:
        return sorted(self._epochs)

    async def _load_in_turn(self, partition: int, shard: S) -> None:
        """Load the partition once the loads gained before it are done.

        Cancelled if the partition is lost meanwhile."""
        try:
            async with self._load_turn:
                await self._load(partition, shard)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Serving the partition's groups from a partial load would hand
            # out wrong offsets; its groups get COORDINATOR_NOT_AVAILABLE.
            log.exception("loading %s-%d failed; its groups are unavailable", self.topic, partition)
            self._loading.discard(partition)
            self._failed.add(partition)
        finally:
            if self._load_tasks.get(partition) is asyncio.current_task():
                del self._load_tasks[partition]

    async def _scan(
        self, partition: int
    ) -> tuple[dict[bytes, bytes | None], int, list[OpenRecord]]:
        return await scan_partition(self._broker.partitions, self.topic, partition)

    def shard(self, partition: int) -> S:
        if partition in self._failed:
            raise KafkaError(ErrorCode.coordinator_not_available)
        shard = self._shards.get(partition)
        if shard is None:
            raise KafkaError(ErrorCode.not_coordinator)
        return shard

    async def call_partition(
        self,
        partition: int,
        ctx: RequestContext,
        handler: Callable[[S, CoordinatorContext, int], ShardResult],
        reach: Reach = EVERYTHING,
    ) -> Any:
        """Run one handler on a shard; ``reach`` is the state its answer reveals."""
        shard = self.shard(partition)
        reply = Reply(reach, self._running_loop())
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

    def loaded_partitions(self) -> list[int]:
        return [p for p in sorted(self._shards) if p not in self._loading]

    def served_partitions(self) -> list[int]:
        """The partitions whose shards answer, loaded or loading."""
        return [p for p in sorted(self._shards) if p not in self._failed]

    def _submit(self, partition: int, result: ShardResult, reach: Reach = ()) -> None:
        """Hand a result to the partition's driver and do what it asks now.

        Replies go at once; records are appended at the end of the loop turn,
        together with the other results of the turn (see ``_append_turn``).
        """
        driver = self._drivers[partition]
        driver.submit(result, self._broker.clock.now_ms(), reach)
        if driver.appends:
            self._append_at_end_of_turn(partition)
        _send(driver.take_replies())
        if driver.markers:
            self._markers_due(partition, driver)
        self._schedule(partition, driver)

    def _append_at_end_of_turn(self, partition: int) -> None:
        if not self._to_append:
            self._running_loop().call_soon(self._append_turn)
        self._to_append.add(partition)

    def _append_turn(self) -> None:
        """Append what the turn's results asked for: per partition one write of
        all their records, in the order the shard applied them, and one fsync.
        Committers with requests in flight together share the write, the
        fsync and the work around each."""
        partitions, self._to_append = self._to_append, set()
        for partition in sorted(partitions):
            self._drive(partition)

    def _drive(self, partition: int) -> None:
        """Make the driver's appends, send its replies, set its timer."""
        driver = self._drivers[partition]
        while driver.appends:
            appends = list(driver.appends)
            driver.appends.clear()
            self._write(partition, driver, appends)  # a failure may queue more
        _send(driver.take_replies())
        if driver.markers:
            self._markers_due(partition, driver)
        self._schedule(partition, driver)

    def _write(self, partition: int, driver: CoordinatorDriver, appends: list[Append]) -> None:
        """Append the batches' records, as few log batches as fit (a
        transaction's marker through the log's marker path); report each
        append durable now, or once fsynced, or failed."""
        broker = self._broker
        written: list[Append] = []
        tried = 0  # appends written, or refused on their own, in order
        try:
            plog = broker.partitions.log(self.topic, partition)
            if broker.faults.active and (error := broker.faults.append_error_for(self.topic)):
                raise KafkaError(error, "fault injected")
            now = broker.clock.now_ms()
            for chunk, batch in encoded_batches(appends, now):
                if batch is not None:
                    plog.append_batch(batch, now)
                    written.extend(chunk)
                else:
                    (marker_append,) = chunk
                    refused = append_marker(plog, marker_append, now)
                    if refused is None:
                        written.append(marker_append)
                    else:
                        driver.failed(marker_append, refused, now)
                tried += len(chunk)
        except (KafkaError, OSError) as e:
            # The log cut the failed write back: what came before it stays.
            log.error("append to %s-%d failed: %s", self.topic, partition, e)
            error = e.error_code if isinstance(e, KafkaError) else ErrorCode.kafka_storage_error
            for append in appends[tried:]:
                driver.failed(append, error, broker.clock.now_ms())
            if error in _LEADERSHIP_GONE:
                # Another broker leads the partition, or may by now: what this
                # shard holds can no longer be answered from, and what it just
                # wrote will never be committed.
                for append in written:
                    driver.failed(append, error, broker.clock.now_ms())
                self.partition_lost(partition)
                return
        if not written:
            return
        fsynced = broker.partitions.appended(self.topic, partition, plog)
        if fsynced is None:
            for append in written:
                driver.durable(append, broker.clock.now_ms())
        else:
            self._syncing.add(fsynced)
            fsynced.add_done_callback(partial(self._fsynced, partition, driver, written))

    def _fsynced(
        self,
        partition: int,
        driver: CoordinatorDriver,
        appends: list[Append],
        fsynced: asyncio.Future[None],
    ) -> None:
        self._syncing.discard(fsynced)
        if self._stopped:  # its replies were given up
            return
        error = "cancelled" if fsynced.cancelled() else fsynced.exception()
        if error is not None:
            log.error("fsync of %s-%d failed: %s", self.topic, partition, error)
        for append in appends:
            if error is not None:
                driver.failed(append, ErrorCode.kafka_storage_error, self._broker.clock.now_ms())
            else:
                driver.durable(append, self._broker.clock.now_ms())
        if driver is self._drivers.get(partition):
            self._drive(partition)
        else:  # the partition was lost meanwhile
            self._retire(driver)

    def _schedule(self, partition: int, driver: CoordinatorDriver) -> None:
        """One loop timer per partition, at the driver's next deadline."""
        if self._stopped:
            return
        current = self._timers.get(partition)
        if current is not None and driver.nothing_due_before(current[0]):
            # Soon enough; a timer set before a deadline was postponed fires
            # early, finds nothing due, and is set again.
            return
        deadline = driver.next_deadline_ms()
        if current is not None:
            if current[0] == deadline:
                return
            current[1].cancel()
            del self._timers[partition]
        if deadline is None:
            return
        delay = max(0.0, (deadline - self._broker.clock.now_ms()) / 1000)
        handle = self._running_loop().call_later(delay, self._fire, partition)
        self._timers[partition] = (deadline, handle)

    def on_clock_moved(self) -> None:
        """The clock jumped (a test's virtual clock): check every timer now,
        as its real-time delay was computed from the old time."""
        for partition in list(self._timers):
            self._fire(partition)

    def _fire(self, partition: int) -> None:
        timer = self._timers.pop(partition, None)
        if timer is not None:
            timer[1].cancel()  # when called before its time
        driver = self._drivers.get(partition)
        if driver is None:
            return
        driver.on_clock(self._broker.clock.now_ms())
        self._drive(partition)


def _send(replies: Iterable[tuple[object, object]]) -> None:
    for reply_to, response in replies:
        assert isinstance(reply_to, asyncio.Future)
        if not reply_to.done():
            reply_to.set_result(response)


class Reply(asyncio.Future[object]):
    """A reply future that knows what its request reads, for results (a
    timer's, another member's request) that answer it later."""

    def __init__(self, reach: Reach, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.reach = reach
