"""A broker alone: every partition is a directory of segment files under
``log.dirs``, led here from start (the local ``PartitionHome``).

An append is made durable by the flush policy: ``appended`` starts an fsync
when the policy asks for one (the future the caller waits on), and otherwise
lets the data reach the disk with the next flush.

Making or removing thousands of partition directories is seconds of file
system calls, so that work runs on a worker thread, and all the topics of one
request are registered (or unregistered) with a single durable registry write.
Creation is all or nothing per topic: its partitions are created first, then
the registry write makes the topic exist. A failure (EMFILE, a full disk)
removes the partitions made so far and answers KAFKA_STORAGE_ERROR for that
topic. Deletion writes the registry first (the commit point), then closes the
logs on the loop and removes their directories off it. A crash between the
two steps leaves directories of an unregistered topic, which the next start
sets aside as strays (``storage/log_manager.py``). Partitions added to a topic
(CreatePartitions) are made the same way: their directories, then one
registry write.

DeleteRecords moves a log start within a segment: the new start is written
to ``log-start-offset-checkpoint`` (fsynced) before the request is answered,
so it survives a crash; retention later deletes the whole segments before it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kgroups.clock import Clock
from kgroups.config.broker_config import BrokerConfig
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.append_waiters import AppendWaiters
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.partitions.home import LeadershipChange
from kgroups.partitions.leader_epochs import EpochEndOffset
from kgroups.partitions.log import PartitionLog, PartitionRead, TimestampOffset
from kgroups.partitions.log_dirs import LogDir, volume_bytes, wanted
from kgroups.partitions.topic_registry import TopicRegistry
from kgroups.storage.background import local_maintenance
from kgroups.storage.flusher import Flusher
from kgroups.storage.log import SegmentLog
from kgroups.storage.log_manager import LogManager
from kgroups.topics.names import Topic

__all__ = ["LocalHome", "LocalHost"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LocalHost(Protocol):
    """What the local home uses of its broker (BrokerCore has it all)."""

    config: BrokerConfig
    clock: Clock
    log_dir: Path
    default_log_config: LogConfig
    topics: TopicRegistry
    append_waiters: AppendWaiters

    def on_topic_gone(self, name: str) -> None: ...


class LocalHome:
    leads_everything = True

    def __init__(self, broker: LocalHost) -> None:
        self._broker = broker
        self._config = broker.config
        self._topics = broker.topics
        self._waiters = broker.append_waiters
        self._clock = broker.clock
        self.logs = LogManager(broker.log_dir, broker.default_log_config)
        self.flusher = Flusher()
        # One log start checkpoint written at a time, each with every move
        # made before it started.
        self._log_starts_written = asyncio.Lock()

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Open (and recover) every partition of every registered topic."""
        now = self._clock.now_ms()
        configs = {t.name: self._topic_config(t) for t in self._topics}
        self.logs.open_all(now, configs, registered=self._topics.partition_exists)
        for topic in self._topics:
            for p in range(topic.partitions):
                if self.logs.get(topic.name, p) is None:
                    self.logs.create(topic.name, p, configs[topic.name])

    async def stop(self) -> None:
        await self.flusher.close()
        self.logs.close()

    def maintenance(self) -> list[Coroutine[Any, Any, None]]:
        return local_maintenance(self._config, self.logs, self.flusher, self._clock)

    def on_leadership_change(self, listener: Callable[[LeadershipChange], None]) -> None:
        """Nothing to hear: every partition is led here, always."""

    # -- partitions ------------------------------------------------------------

    def log(self, topic: str, partition: int) -> SegmentLog:
        plog = self.logs.get(topic, partition)
        if plog is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"This server does not host this topic-partition: {topic}-{partition}",
            )
        if plog.offline:
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"{topic}-{partition} is offline (disk failure)"
            )
        return plog

    async def confirm_leadership(self, topic: str, partition: int, plog: PartitionLog) -> bool:
        return True  # alone, this broker leads every partition it has

    def appended(
        self, topic: str, partition: int, plog: PartitionLog
    ) -> asyncio.Future[None] | None:
        """Wake fetchers; start an fsync if the flush policy says so (the future
        completes when it is done)."""
        assert isinstance(plog, SegmentLog)
        self._waiters.notify(topic, partition)
        if plog.needs_flush(self._clock.now_ms()):
            return self.flusher.request(plog)
        if plog.rolled_since_flush:
            # As Kafka flushes a segment it rolls: in the background, nobody waits.
            self.flusher.schedule(plog)
        return None

    def served(self) -> Iterable[tuple[str, int, PartitionLog]]:
        return (
            (topic, partition, plog)
            for topic, partition, plog in self.logs.logs()
            if not plog.closed and not plog.offline
        )

    async def describe_log_dirs(
        self, partitions: Collection[TopicPartition] | None
    ) -> list[LogDir]:
        """The one log directory: its partitions' segment bytes and its volume."""
        path = str(self.logs.log_dir.absolute())
        try:
            total, usable = await asyncio.to_thread(volume_bytes, path)
        except OSError as e:
            log.warning("cannot describe log directory %s: %s", path, e)
            return [LogDir(path, ErrorCode.kafka_storage_error)]
        logs = {(t, p): plog for t, p, plog in self.served()}
        sizes = {tp: logs[tp].size or 0 for tp in wanted(logs, partitions)}
        return [LogDir(path, sizes=sizes, total_bytes=total, usable_bytes=usable)]

    async def read_many(self, reads: list[PartitionRead]) -> list[bytes | KafkaError]:
        """Local logs answer every read from their files; this serves callers
        that collected reads anyway."""
        out: list[bytes | KafkaError] = []
        for r in reads:
            try:
                plog = self.log(r.topic, r.partition)
                out.append(plog.read(r.offset, r.max_bytes, r.max_offset, min_one=r.min_one))
            except KafkaError as e:
                out.append(e)
        return out

    async def offset_for_timestamp(
        self, topic: str, partition: int, timestamp: int
    ) -> TimestampOffset | None:
        return self.log(topic, partition).offset_for_timestamp(timestamp)

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        out: dict[TopicPartition, int | KafkaError] = {}
        moved = []
        for (topic, partition), offset in offsets.items():
            try:
                plog = self.log(topic, partition)
                if plog.advance_log_start(offset):
                    moved.append((topic, partition))
                out[(topic, partition)] = plog.log_start_offset
            except KafkaError as e:
                out[(topic, partition)] = e
        if moved:  # one durable checkpoint for them all, before the answer
            try:
                await self._checkpoint_log_starts()
            except OSError as e:
                error = storage_error("checkpointing the log starts", e)
                out.update(dict.fromkeys(moved, error))
        return out

    async def _checkpoint_log_starts(self) -> None:
        async with self._log_starts_written:
            await asyncio.to_thread(self.logs.write_log_starts, self.logs.log_starts())

    async def max_timestamp_offset(self, topic: str, partition: int) -> TimestampOffset | None:
        return self.log(topic, partition).max_timestamp_offset()

    async def end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> EpochEndOffset:
        return self.log(topic, partition).end_offset_for_epoch(epoch)

    async def log_start_epoch(self, topic: str, partition: int) -> int:
        return self.log(topic, partition).log_start_epoch()

    async def aborted_transactions(
        self, topic: str, partition: int, start: int, end: int
    ) -> list[tuple[int, int]]:
        return self.log(topic, partition).aborted_transactions(start, end)

    # -- topics ----------------------------------------------------------------

    async def create_topics(self, planned: list[tuple[Topic, LogConfig]]) -> dict[str, KafkaError]:
        failed: dict[str, KafkaError] = {}
        made: list[tuple[Topic, list[SegmentLog]]] = []
        now = self._clock.now_ms()
        for topic, config in planned:
            try:
                logs = await asyncio.to_thread(
                    self.logs.create_partitions, topic.name, topic.partitions, config, now
                )
            except (OSError, KafkaError) as e:
                failed[topic.name] = storage_error(f"creating topic {topic.name}", e)
                continue
            made.append((topic, logs))
        if not made:
            return failed
        try:
            await self._topics.add_all(topic for topic, _logs in made)
        except OSError as e:
            error = storage_error("writing the topic registry", e)
            for topic, logs in made:
                failed[topic.name] = error
                await asyncio.to_thread(_discard, logs)
            return failed
        for topic, logs in made:
            self.logs.adopt(topic.name, logs)
        return failed

    def create_topic_now(self, topic: Topic, config: LogConfig) -> Topic:
        logs = self.logs.create_partitions(
            topic.name, topic.partitions, config, self._clock.now_ms()
        )
        try:
            created = self._topics.add(topic.name, topic.partitions, topic.configs)
        except BaseException:
            _discard(logs)
            raise
        self.logs.adopt(topic.name, logs)
        return created

    async def add_partitions(self, topic: Topic, count: int, config: LogConfig) -> Topic:
        first, now = topic.partitions, self._clock.now_ms()
        try:
            logs = await asyncio.to_thread(
                self.logs.create_partitions, topic.name, count, config, now, first
            )
        except (OSError, KafkaError) as e:
            raise storage_error(f"adding partitions to {topic.name}", e) from e
        try:
            grown = await self._topics.grow(topic, count)
        except OSError as e:
            await asyncio.to_thread(_discard, logs)
            raise storage_error("writing the topic registry", e) from e
        self.logs.adopt(topic.name, logs, first)
        return grown

    def reconfigure(self, configs: Mapping[str, LogConfig]) -> None:
        for topic in self._topics:
            config = configs.get(topic.name)
            for p in range(topic.partitions):
                plog = self.logs.get(topic.name, p)
                if config is not None and plog is not None:
                    plog.update_config(config)

    async def alter_topic_configs(self, topic: Topic, plan: ConfigPlan) -> Topic:
        configs, config = plan(topic.configs)
        try:
            changed = await self._topics.set_configs(topic, configs)
        except OSError as e:
            raise storage_error("writing the topic registry", e) from e
        for p in range(changed.partitions):
            plog = self.logs.get(topic.name, p)
            if plog is not None:
                plog.update_config(config)
        return changed

    async def delete_topics(self, doomed: list[Topic]) -> dict[str, KafkaError]:
        try:
            await self._topics.remove_all(topic.name for topic in doomed)
        except OSError as e:
            error = storage_error("writing the topic registry", e)
            return {topic.name: error for topic in doomed}
        directories = []
        for topic in doomed:
            directories += self.logs.detach(topic.name, topic.partitions)
            for p in range(topic.partitions):
                self._waiters.notify(topic.name, p)
            self._broker.on_topic_gone(topic.name)
        try:  # a topic created again under the name must start at 0
            await self._checkpoint_log_starts()
        except OSError as e:
            log.error("cannot checkpoint the log starts: %s", e)
        await asyncio.to_thread(self.logs.remove_directories, directories)
        return {}

    def _topic_config(self, topic: Topic) -> LogConfig:
        return self.logs.default_config.with_overrides(topic.configs)


def _discard(logs: Sequence[SegmentLog]) -> None:
    for partition_log in logs:
        partition_log.delete()


def storage_error(what: str, cause: BaseException) -> KafkaError:
    log.error("%s failed: %s", what, cause)
    if isinstance(cause, KafkaError):
        return cause
    return KafkaError(ErrorCode.kafka_storage_error, f"{what} failed: {cause}")
