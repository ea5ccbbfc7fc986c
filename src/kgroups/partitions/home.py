"""Where a broker's partitions live: the seam the broker stands on.

Two homes answer to ``PartitionHome``:

- ``kgroups.storage.home.LocalHome``: a broker alone; every partition of every
  topic is a directory of segment files under ``log.dirs``, led here from start.
- ``kgroups.postgres_store.home.StoreHome``: a broker in a cluster; the
  partitions are rows in PostgreSQL, and this broker serves those it leads
  (the cluster member tells the home which, after every turn).

Which one a broker gets is decided once, at start-up, in
``kgroups.server.partition_homes``; nothing above this seam imports either.
The coordinator runtimes follow ``on_leadership_change`` to load and drop the
internal topics' partitions; request handlers take a partition's log with
``log`` and report each append with ``appended``. Retention, compaction,
truncation and forgetting idle producers are each home's own background work
(``maintenance``), on its own files or rows; a cluster's appends carry the
leader epoch and the log end they expect, checked by the store at commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgroups.errors import KafkaError
from kgroups.partitions.config import ConfigPlan, LogConfig
from kgroups.partitions.leader_epochs import EpochEndOffset
from kgroups.partitions.log import PartitionLog, PartitionRead, TimestampOffset
from kgroups.partitions.log_dirs import LogDir
from kgroups.topics.names import Topic

__all__ = ["LeadershipChange", "PartitionHome"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class LeadershipChange:
    """Partitions gained here (with their leader epoch) and lost, in one step."""

    gained: Mapping[TopicPartition, int] = field(default_factory=dict)
    lost: frozenset[TopicPartition] = frozenset()


class PartitionHome(Protocol):
    leads_everything: bool
    """True when every partition is led here from start (a broker alone); else
    leadership comes and goes through ``on_leadership_change``."""

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Open the logs or join the store; the partitions are served after it."""
        ...

    async def stop(self) -> None:
        """Make what was appended durable and close."""
        ...

    def maintenance(self) -> list[Coroutine[Any, Any, None]]:
        """The home's background loops (retention, compaction, flushes, idle
        producers), for the broker to run and cancel at stop."""
        ...

    def on_leadership_change(self, listener: Callable[[LeadershipChange], None]) -> None:
        """Hear which partitions become available here and which are gone."""
        ...

    # -- partitions ------------------------------------------------------------

    def log(self, topic: str, partition: int) -> PartitionLog:
        """A partition led here and online, else a KafkaError saying why
        (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR)."""
        ...

    def appended(
        self, topic: str, partition: int, plog: PartitionLog
    ) -> asyncio.Future[None] | None:
        """Called after every append: a future when making it durable (an
        fsync, a commit to the store) has started and must be waited for."""
        ...

    async def confirm_leadership(self, topic: str, partition: int, plog: PartitionLog) -> bool:
        """Whether the partition is still led here by ``plog``, asked where
        leadership is decided, for an answer drawn from the log's memory that
        a stale leader would get wrong. False drops the log."""
        ...

    def served(self) -> Iterable[tuple[str, int, PartitionLog]]:
        """Every partition served here now, with its log."""
        ...

    async def read_many(self, reads: list[PartitionRead]) -> list[bytes | KafkaError]:
        """What the logs could not answer from memory (``NotInMemory``)."""
        ...

    async def offset_for_timestamp(
        self, topic: str, partition: int, timestamp: int
    ) -> TimestampOffset | None: ...

    async def max_timestamp_offset(self, topic: str, partition: int) -> TimestampOffset | None: ...

    async def end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> EpochEndOffset:
        """What the log could not answer from memory (``NotInMemory``)."""
        ...

    async def log_start_epoch(self, topic: str, partition: int) -> int: ...

    async def aborted_transactions(
        self, topic: str, partition: int, start: int, end: int
    ) -> list[tuple[int, int]]:
        """What the log could not answer from memory (``NotInMemory``)."""
        ...

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        """Move the log start of each partition led here up to its offset
        (DeleteRecords), durably; each one's log start now, or why not
        (OFFSET_OUT_OF_RANGE past the high watermark, NOT_LEADER_OR_FOLLOWER)."""
        ...

    async def describe_log_dirs(
        self, partitions: Collection[TopicPartition] | None
    ) -> list[LogDir]:
        """The log directories, each with the sizes of the partitions served
        here that were asked for (None: all of them), for DescribeLogDirs."""
        ...

    # -- topics ----------------------------------------------------------------

    async def create_topics(self, planned: list[tuple[Topic, LogConfig]]) -> dict[str, KafkaError]:
        """Create the topics' partitions and register them; the errors of those
        that failed, by name."""
        ...

    def create_topic_now(self, topic: Topic, config: LogConfig) -> Topic:
        """Create one topic on the loop (the coordinators' internal topics);
        the topic as registered."""
        ...

    async def add_partitions(self, topic: Topic, count: int, config: LogConfig) -> Topic:
        """Grow the topic to ``count`` partitions (CreatePartitions), the new
        ones empty; the topic as registered now."""
        ...

    async def delete_topics(self, doomed: list[Topic]) -> dict[str, KafkaError]:
        """Delete the topics and their data; the errors of those that failed."""
        ...

    def reconfigure(self, configs: Mapping[str, LogConfig]) -> None:
        """The topics' log configs changed (new broker defaults): apply them
        to the logs here, by topic name."""
        ...

    async def alter_topic_configs(self, topic: Topic, plan: ConfigPlan) -> Topic:
        """Replace the topic's config overrides with what ``plan`` makes of
        them, durably, and apply the log config to the topic's logs here; the
        topic as registered now."""
        ...
