"""A broker in a cluster: its partitions live in the PostgreSQL store, and it
serves those it leads (the store's ``PartitionHome``).

The cluster member (kgroups.cluster.member) decides what is led here, from
its lease, and tells this home after every turn (``follow``): a partition
gained gets a ``StoreLog`` starting at the store's log end, a partition lost is
failed and dropped. Appends are made durable by the store writer, which
commits every led log's pending batches in one transaction each round; a
refused or unknown commit drops that partition, and its followers (the
coordinators) drop what they built on it until it is loaded again.

Topics are cluster metadata: creating one, or adding partitions to one,
also elects leaders, so the member does it (``ClusterMetadata``) and this
home forwards. DeleteRecords moves a log start in the store, fenced like an
append (``truncation.advance_log_start``), before it is answered: a later
leader reads it there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from typing import Any, Protocol

from kgroups.clock import Clock
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.partitions.home import LeadershipChange
from kgroups.partitions.leader_epochs import NO_EPOCH, EpochEndOffset
from kgroups.partitions.log import NotInMemory, PartitionLog, PartitionRead, TimestampOffset
from kgroups.partitions.log_dirs import LogDir, wanted
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.postgres_store.aborted_txns import aborted_transactions
from kgroups.postgres_store.epoch_reads import end_offset_for_epoch, log_start_epoch
from kgroups.postgres_store.fencing import Writer, still_leads
from kgroups.postgres_store.log_sizes import partition_sizes, store_log_dir
from kgroups.postgres_store.maintenance import StoreMaintenance
from kgroups.postgres_store.reads import batch_at_timestamp, max_timestamp_batch, read
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.store_log import StoreLog
from kgroups.postgres_store.thread import StoreThread
from kgroups.postgres_store.truncation import advance_log_start
from kgroups.postgres_store.writer import StoreWriter
from kgroups.records.batch import decode_records, read_header
from kgroups.topics.names import Topic

__all__ = ["ClusterMetadata", "StoreHome"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class ClusterMetadata(Protocol):
    """What the home asks of the cluster member."""

    def writer(self) -> Writer | None:
        """Who writes now, if the lease may be trusted for a write."""
        ...

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The epoch at which this broker leads the partition, if it does."""
        ...

    def knows_partition(self, topic: str, partition: int) -> bool: ...

    def poke(self) -> None:
        """Read the cluster again soon: something here found the view stale."""
        ...

    async def create_topics(self, topics: list[Topic]) -> dict[str, KafkaError]: ...

    def create_topic_now(self, topic: Topic) -> Topic:
        """The topic as the store holds it (created by another broker, maybe)."""
        ...

    async def delete_topics(self, names: list[str]) -> dict[str, KafkaError]: ...

    async def add_partitions(self, name: str, count: int) -> Topic:
        """The topic grown in the store, with the new partitions' leaders elected."""
        ...

    async def alter_topic_configs(self, name: str, plan: ConfigPlan) -> tuple[Topic, LogConfig]:
        """The topic with its config overrides replaced in the store by what
        ``plan`` makes of them, and the log config they make."""
        ...


class StoreHome:
    leads_everything = False

    def __init__(
        self,
        url: str,
        broker_id: int,
        metadata: ClusterMetadata,
        append_waiters: AppendWaiters,
        clock: Clock,
        producer_expiration_ms: int,
        retention_check_ms: int,
        cleaner_backoff_ms: int | None,
        append_linger_ms: int = 0,
    ) -> None:
        self._broker_id = broker_id
        self._metadata = metadata
        self._waiters = append_waiters
        self._retention_s = retention_check_ms / 1000
        self._cleaner_s = None if cleaner_backoff_ms is None else cleaner_backoff_ms / 1000
        self._reads = StoreThread(url, "kgroups-store-reads")
        self._log_dir = store_log_dir(url)
        self.writer = StoreWriter(
            StoreThread(url, "kgroups-store-writer"),
            metadata.writer,
            self._committed,
            self._failed,
            append_linger_ms,
        )
        self.logs: dict[TopicPartition, StoreLog] = {}
        self.store_maintenance = StoreMaintenance(
            url, lambda: self.logs, metadata.writer, clock, producer_expiration_ms
        )
        self._listeners: list[Callable[[LeadershipChange], None]] = []

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Nothing to open: partitions come as the member's turns gain them."""

    async def flush(self) -> None:
        """Commit what was appended; stop taking commits (before a hand-over)."""
        await self.writer.close()

    async def stop(self) -> None:
        await self.writer.close()
        self.drop(list(self.logs), ErrorCode.not_leader_or_follower)
        for thread in (self._reads, self.writer.thread, self.store_maintenance.thread):
            await asyncio.to_thread(thread.close)

    def maintenance(self) -> list[Coroutine[Any, Any, None]]:
        loops = [self.store_maintenance.retention_loop(self._retention_s)]
        if self._cleaner_s is not None:
            loops.append(self.store_maintenance.cleaner_loop(self._cleaner_s))
        return loops

    def on_leadership_change(self, listener: Callable[[LeadershipChange], None]) -> None:
        self._listeners.append(listener)

    # -- following leadership ----------------------------------------------------

    def held(self) -> set[TopicPartition]:
        """The partitions whose log here is sound."""
        return {tp for tp, slog in self.logs.items() if slog.failed is None}

    def follow(
        self,
        leading: Mapping[TopicPartition, int],
        configs: Mapping[str, LogConfig],
        ends: Mapping[TopicPartition, tuple[int, int]] | None = None,
        producers: Mapping[TopicPartition, ProducerStateManager] | None = None,
        read_from: int | None = None,
    ) -> None:
        """Make the logs follow what the lease says this broker leads, at which
        leader epoch; ``ends`` and ``producers`` (read in one store transaction,
        begun at the writer's ``read_from`` mark) are what a newly gained
        partition starts from. ``configs`` are the topics' log configs by name.

        A partition this broker stopped serving (it could not vouch for its
        lease for a moment, say) may be gained again under the same lease and
        leader epoch, with a write of its own still on its way to the store:
        queued in the writer, the read's row lock does not see it (gained.py),
        and it lands after the read. Such a partition waits for a read begun
        after the writer answered: started from the older one, it would take
        new batches on a stale end and a stale producer state (a producer's
        next batch "out of order", and its retry of the landed one written
        twice)."""
        lost = [tp for tp, slog in self.logs.items() if leading.get(tp) != slog.leader_epoch]
        self.drop(lost, ErrorCode.not_leader_or_follower)
        for tp, slog in self.logs.items():
            # A topic's configs changed (by AlterConfigs on any broker) reach its logs.
            config = configs.get(tp[0])
            if config is not None and config is not slog.config and config != slog.config:
                slog.config = config
        gained: dict[TopicPartition, int] = {}
        for tp, epoch in leading.items():
            if tp in self.logs or ends is None or tp not in ends:
                continue
            if read_from is not None and self.writer.wrote_since(tp, read_from):
                self._metadata.poke()  # the next turn reads it again
                continue
            config = configs.get(tp[0])
            state = None if producers is None else producers.get(tp)
            if config is None or state is None:
                self._metadata.poke()  # dropped during this turn: the next one reads it
                continue
            start, end = ends[tp]
            self.logs[tp] = StoreLog(tp[0], tp[1], epoch, start, end, config, state)
            gained[tp] = epoch
        if gained or lost:
            log.info(
                "broker %d now leads %d partition(s): +%d -%d",
                self._broker_id,
                len(self.logs),
                len(gained),
                len(lost),
            )
            self._tell(LeadershipChange(gained, frozenset(lost)))

    def release(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop serving partitions this broker is about to give to another:
        here first, so that it never answers for them once the other may."""
        released = [tp for tp in partitions if tp in self.logs]
        self.drop(released, ErrorCode.not_leader_or_follower)
        if released:
            log.info("broker %d gives away %d partition(s)", self._broker_id, len(released))
            self._tell(LeadershipChange({}, frozenset(released)))

    def drop(self, partitions: Iterable[TopicPartition], error: ErrorCode) -> None:
        for tp in partitions:
            slog = self.logs.pop(tp, None)
            if slog is not None and slog.failed is None:
                slog.fail(KafkaError(error, f"{tp[0]}-{tp[1]} is no longer led here"))
            self._waiters.notify(*tp)

    def _tell(self, change: LeadershipChange) -> None:
        for listener in self._listeners:
            listener(change)

    def _committed(self, slog: StoreLog) -> None:
        self._waiters.notify(slog.topic, slog.partition)

    def _failed(self, slog: StoreLog) -> None:
        """A refused or unknown commit: start the partition again from the store."""
        tp = (slog.topic, slog.partition)
        if self.logs.get(tp) is slog:
            del self.logs[tp]
            # What was built on the uncommitted appends is gone with them: its
            # followers drop the partition, and take it up again once reloaded.
            self._tell(LeadershipChange({}, frozenset((tp,))))
        self._waiters.notify(*tp)
        self._metadata.poke()

    # -- partitions ------------------------------------------------------------

    def log(self, topic: str, partition: int) -> StoreLog:
        if not self._metadata.knows_partition(topic, partition):
            self._metadata.poke()
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"This server does not host this topic-partition: {topic}-{partition}",
            )
        epoch = self._metadata.leader_epoch(topic, partition)
        slog = self.logs.get((topic, partition))
        if epoch is None or slog is None or slog.leader_epoch != epoch or slog.failed:
            self._metadata.poke()
            raise KafkaError(
                ErrorCode.not_leader_or_follower,
                f"broker {self._broker_id} does not lead {topic}-{partition}",
            )
        return slog

    def appended(
        self, topic: str, partition: int, plog: PartitionLog
    ) -> asyncio.Future[None] | None:
        """Every append is committed to the store before it is acknowledged;
        its fetchers wake once the commit is done."""
        assert isinstance(plog, StoreLog)
        return self.writer.request(plog)

    async def confirm_leadership(self, topic: str, partition: int, plog: PartitionLog) -> bool:
        """Asked of the store: this broker's view of who leads may be a turn old."""
        assert isinstance(plog, StoreLog)
        writer = self._metadata.writer()
        if writer is not None:
            epoch = plog.leader_epoch
            try:
                if await self._reads.run(
                    lambda s: s.transaction(
                        lambda cur: still_leads(cur, s, writer, topic, partition, epoch)
                    )
                ):
                    return True
            except Exception as e:  # the store cannot say: neither can this broker
                log.warning("cannot confirm the leadership of %s-%d: %s", topic, partition, e)
                return False
        if self.logs.get((topic, partition)) is plog:
            self._failed(plog)  # dropped, and read again from the store if led here
        return False

    def served(self) -> Iterable[tuple[str, int, PartitionLog]]:
        return ((t, p, slog) for (t, p), slog in self.logs.items() if slog.failed is None)

    async def read_many(self, reads: list[PartitionRead]) -> list[bytes | KafkaError]:
        """Read from the store what a leader no longer holds in memory."""

        def work(store: Store) -> list[bytes | KafkaError]:
            out: list[bytes | KafkaError] = []
            for r in reads:
                try:
                    result = read(
                        store,
                        r.topic,
                        r.partition,
                        r.offset,
                        r.max_bytes,
                        r.max_offset,
                        min_one=r.min_one,
                    )
                    out.append(b"".join(result.batches))
                except KafkaError as e:
                    out.append(e)
            return out

        return await self._reads.run(work)

    async def describe_log_dirs(
        self, partitions: Collection[TopicPartition] | None
    ) -> list[LogDir]:
        """One directory, the store: the stored bytes of the partitions led
        here. Its volume is the database server's, which it does not tell."""
        led = wanted((tp for tp, slog in self.logs.items() if slog.failed is None), partitions)
        try:
            sizes = await self._reads.run(lambda s: partition_sizes(s, led))
        except Exception as e:  # the store cannot answer now
            log.warning("cannot read partition sizes from the store: %s", e)
            return [LogDir(self._log_dir, ErrorCode.kafka_storage_error)]
        return [LogDir(self._log_dir, sizes={tp: sizes.get(tp, 0) for tp in led})]

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        out: dict[TopicPartition, int | KafkaError] = {}
        moves: dict[TopicPartition, tuple[StoreLog, int]] = {}
        for tp, offset in offsets.items():
            try:
                slog = self.log(*tp)
                if offset > slog.high_watermark:
                    raise KafkaError(
                        ErrorCode.offset_out_of_range,
                        f"Cannot increment the log start offset to {offset} of {tp[0]}-{tp[1]} "
                        f"since it is larger than the high watermark {slog.high_watermark}",
                    )
            except KafkaError as e:
                out[tp] = e
                continue
            if offset <= slog.log_start_offset:
                out[tp] = slog.log_start_offset
            else:
                moves[tp] = (slog, offset)
        writer = self._metadata.writer()
        if moves and writer is None:
            lost = KafkaError(ErrorCode.not_leader_or_follower, "this broker's lease is not live")
            return out | dict.fromkeys(moves, lost)

        def work(store: Store) -> dict[TopicPartition, int | KafkaError]:
            assert writer is not None
            done: dict[TopicPartition, int | KafkaError] = {}
            for (topic, p), (slog, offset) in moves.items():
                try:  # each fenced like an append of this leader
                    epoch = slog.leader_epoch
                    done[(topic, p)] = advance_log_start(store, writer, topic, p, epoch, offset)
                except KafkaError as e:
                    done[(topic, p)] = e
            return done

        # On the writer's connection: in order with this leader's appends.
        moved = await self.writer.thread.run(work) if moves else {}
        for tp, start in moved.items():
            slog = moves[tp][0]
            if isinstance(start, int) and self.logs.get(tp) is slog:
                slog.advance_log_start(start)
        return out | moved

    async def offset_for_timestamp(
        self, topic: str, partition: int, timestamp: int
    ) -> TimestampOffset | None:
        batch = await self._reads.run(lambda s: batch_at_timestamp(s, topic, partition, timestamp))
        if batch is None:
            return None
        for record in decode_records(batch):
            if record.timestamp >= timestamp:
                return TimestampOffset(record.offset, record.timestamp, _epoch(batch))
        return None

    async def max_timestamp_offset(self, topic: str, partition: int) -> TimestampOffset | None:
        batch = await self._reads.run(lambda s: max_timestamp_batch(s, topic, partition))
        if batch is None:
            return None
        best = max(decode_records(batch), key=lambda r: r.timestamp, default=None)
        if best is None:
            return None
        # The first record with the largest timestamp.
        first = next(r for r in decode_records(batch) if r.timestamp == best.timestamp)
        return TimestampOffset(first.offset, first.timestamp, _epoch(batch))

    async def end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> EpochEndOffset:
        """An epoch older than the leader's own: its batches are in the store."""
        slog = self.log(topic, partition)
        try:
            return slog.end_offset_for_epoch(epoch)
        except NotInMemory:
            pass
        own, start, end = slog.leader_epoch, slog.epoch_start, slog.log_end_offset
        return await self._reads.run(
            lambda s: end_offset_for_epoch(s, topic, partition, epoch, own, start, end)
        )

    async def log_start_epoch(self, topic: str, partition: int) -> int:
        slog = self.log(topic, partition)
        try:
            return slog.log_start_epoch()
        except NotInMemory:
            pass
        own, start = slog.leader_epoch, slog.epoch_start
        log_start, epoch = await self._reads.run(
            lambda s: log_start_epoch(s, topic, partition, own, start)
        )
        slog.learnt_start_epoch(log_start, epoch)
        return epoch

    async def aborted_transactions(
        self, topic: str, partition: int, start: int, end: int
    ) -> list[tuple[int, int]]:
        """Aborts older than the leader holds in memory: the store's index."""
        try:
            return self.log(topic, partition).aborted_transactions(start, end)
        except NotInMemory:
            pass
        return await self._reads.run(
            lambda s: aborted_transactions(s, topic, partition, start, end)
        )

    # -- topics: cluster metadata, kept by the member ------------------------------

    async def create_topics(self, planned: list[tuple[Topic, LogConfig]]) -> dict[str, KafkaError]:
        return await self._metadata.create_topics([topic for topic, _config in planned])

    def create_topic_now(self, topic: Topic, config: LogConfig) -> Topic:
        return self._metadata.create_topic_now(topic)

    async def add_partitions(self, topic: Topic, count: int, config: LogConfig) -> Topic:
        return await self._metadata.add_partitions(topic.name, count)

    async def delete_topics(self, doomed: list[Topic]) -> dict[str, KafkaError]:
        return await self._metadata.delete_topics([topic.name for topic in doomed])

    def reconfigure(self, configs: Mapping[str, LogConfig]) -> None:
        for (name, _p), slog in self.logs.items():
            config = configs.get(name)
            if config is not None:
                slog.config = config

    async def alter_topic_configs(self, topic: Topic, plan: ConfigPlan) -> Topic:
        changed, config = await self._metadata.alter_topic_configs(topic.name, plan)
        # The logs led here take it now; the other brokers at their next turn.
        for (name, _p), slog in self.logs.items():
            if name == topic.name:
                slog.config = config
        return changed


def _epoch(batch: bytes) -> int:
    return max(read_header(batch).partition_leader_epoch, NO_EPOCH)
