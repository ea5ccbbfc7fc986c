"""Retention and compaction of the partitions this broker leads in cluster mode.

The leader of a partition is the only one that shrinks its log, as it is the
only one that appends: every change is fenced by its leader epoch and lease in
the store (see ``partition_truncation`` and ``partition_compaction``), so a
replaced leader changes nothing. The work runs on a store connection and
thread of its own, so a long compaction never delays a lease renewal or a
commit; partitions are taken one at a time.

- Retention, every ``log.retention.check.interval.ms``: ``retention.ms`` and
  ``retention.bytes`` of ``cleanup.policy=delete`` topics move the log start;
  producers idle for ``producer.id.expiration.ms`` are forgotten, unless
  their transaction is open.
- Compaction, every ``log.cleaner.backoff.ms`` (``log.cleaner.enable``):
  ``cleanup.policy=compact`` topics, ``__consumer_offsets`` among them, up
  to the last stable offset.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kgroups.clock import Clock
from kgroups.errors import KafkaError
from kgroups.postgres_store.compaction import CompactionStats, compact
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.producer_states import expire_producers
from kgroups.postgres_store.store import Store
from kgroups.postgres_store.store_log import StoreLog
from kgroups.postgres_store.thread import StoreThread
from kgroups.postgres_store.truncation import advance_log_start, retention_start

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
_LONG_MIN = -(2**63)


class StoreMaintenance:
    def __init__(
        self,
        url: str,
        logs: Callable[[], Mapping[TopicPartition, StoreLog]],
        writer: Callable[[], Writer | None],
        clock: Clock,
        producer_expiration_ms: int,
    ) -> None:
        self.producer_expiration_ms = producer_expiration_ms
        self.thread = StoreThread(url, "kgroups-store-maintenance")
        self._logs = logs
        self._writer = writer
        self._clock = clock
        # Partitions a round found not worth compacting, with their leader epoch
        # and log end then: until the log grows, the next round would agree.
        self._not_dirty: dict[TopicPartition, tuple[int, int]] = {}

    def _led(self) -> list[StoreLog]:
        return [slog for slog in self._logs().values() if slog.failed is None]

    def _still_led(self, slog: StoreLog) -> bool:
        return self._logs().get((slog.topic, slog.partition)) is slog and slog.failed is None

    # -- retention -------------------------------------------------------------------

    async def retention_loop(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                moved = await self.apply_retention()
            except Exception:  # a bug or an unexpected database error: try next time
                log.exception("retention in the cluster store failed")
                continue
            if moved:
                log.info("retention moved the log start of %d partition(s)", moved)

    async def apply_retention(self) -> int:
        """One pass over the partitions led here; how many log starts moved."""
        moved = 0
        for slog in self._led():
            await self._expire_producers(slog)
            config = slog.config
            if not config.delete or (config.retention_ms < 0 and config.retention_bytes < 0):
                continue
            writer = self._writer()
            if writer is None:
                break
            try:
                start = await self._retain(slog, writer)
            except KafkaError as e:  # not led any more, or the store is unreachable
                log.info("retention of %s-%d skipped: %s", slog.topic, slog.partition, e)
                continue
            if start is not None and self._still_led(slog):
                slog.advance_log_start(start)
                moved += 1
        return moved

    async def _expire_producers(self, slog: StoreLog) -> None:
        """Forget producers idle for ``producer.id.expiration.ms``, here and in the store."""
        now_ms = self._clock.now_ms()
        if not slog.expire_producers(now_ms, self.producer_expiration_ms):
            return
        topic, partition = slog.topic, slog.partition
        before_ms = now_ms - self.producer_expiration_ms

        def work(store: Store) -> int:
            return store.transaction(lambda cur: expire_producers(cur, topic, partition, before_ms))

        try:
            await self.thread.run(work)
        except KafkaError as e:
            log.info("expiring producers of %s-%d failed: %s", topic, partition, e)

    async def _retain(self, slog: StoreLog, writer: Writer) -> int | None:
        config = slog.config
        now_ms = self._clock.now_ms()
        cutoff = now_ms - config.retention_ms if config.retention_ms >= 0 else _LONG_MIN
        topic, partition, epoch = slog.topic, slog.partition, slog.leader_epoch

        def work(store: Store) -> int | None:
            start = retention_start(
                store, topic, partition, cutoff_ms=cutoff, retention_bytes=config.retention_bytes
            )
            if start is None:
                return None
            return advance_log_start(store, writer, topic, partition, epoch, start)

        return await self.thread.run(work)

    # -- compaction ------------------------------------------------------------------

    async def cleaner_loop(self, backoff_s: float) -> None:
        while True:
            try:
                await self.compact_all()
            except Exception:
                log.exception("compaction in the cluster store failed")
            await asyncio.sleep(backoff_s)

    async def compact_all(self) -> int:
        """One round over the compacted partitions led here; how many were compacted."""
        done = 0
        led = self._led()
        kept = {(slog.topic, slog.partition) for slog in led}
        self._not_dirty = {tp: v for tp, v in self._not_dirty.items() if tp in kept}
        for slog in led:
            config = slog.config
            tp = (slog.topic, slog.partition)
            seen = (slog.leader_epoch, slog.high_watermark)
            if not config.compact or self._not_dirty.get(tp) == seen:
                continue
            writer = self._writer()
            if writer is None:
                break
            try:
                stats = await self._compact(slog, writer)
            except KafkaError as e:
                log.info("compaction of %s-%d skipped: %s", slog.topic, slog.partition, e)
                continue
            if stats is None:
                self._not_dirty[tp] = seen
            else:
                if self._still_led(slog):
                    slog.compacted(stats.clean_offset)
                done += 1
                log.info("%s-%d: %s", slog.topic, slog.partition, stats)
        return done

    async def _compact(self, slog: StoreLog, writer: Writer) -> CompactionStats | None:
        now_ms = self._clock.now_ms()
        topic, partition, epoch, config = slog.topic, slog.partition, slog.leader_epoch, slog.config
        # Read on the loop: it only grows meanwhile, so the round stays below it.
        stable = slog.last_stable_offset
        return await self.thread.run(
            lambda store: compact(
                store,
                writer,
                topic,
                partition,
                epoch,
                config,
                now_ms,
                last_stable_offset=stable,
            )
        )

    def close(self) -> None:
        self.thread.close()
