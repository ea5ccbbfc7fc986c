"""Group commit to the cluster store: the store's counterpart of the flusher.

Produce and the coordinator append to a ``StoreLog`` in memory and wait on the
future ``request`` returns. While one transaction is in flight, the logs
appended to meanwhile are collected; the next transaction takes every one of
their pending batches at once (``append_assigned``: one statement, committed
on its own). Each partition's append is conditional on the store's log ending at
the offset the leader gave its first batch, and on the writer's lease and
leader epoch: a refused partition fails its waiters with
NOT_LEADER_OR_FOLLOWER and stops being led here; a store that cannot be
reached fails them with KAFKA_STORAGE_ERROR (never an acknowledgement), and
the logs in that transaction start again from what the store holds.

A transaction that follows the last one back to back (appends came while it
was in flight) and carries a coordinator's appends (``__consumer_offsets``,
``__transaction_state``) first waits ``cluster.store.append.linger.ms``, at
most as long as the last transaction took, as Kafka's group coordinator
lingers before writing (``group.coordinator.append.linger.ms``): the
committers the last transaction answered send their next commits meanwhile,
and they share the next transaction instead of waiting for the one after.
Every transaction costs the store a statement and a WAL flush, and the
broker a round trip, whatever it carries; with several brokers on one store,
each broker's share of the committers would otherwise split into two halves
taking turns, each half's transaction carrying half as much. A writer that
was idle commits at once, and so do producers' appends on their own: a
producer that pipelines its requests has the next ones waiting already.

The writer also says which partitions it wrote to since a given moment
(``mark``, ``wrote_since``): a partition this broker stopped serving and takes
up again must not start from a read of the store that one of its own writes,
on its way then, may have landed after (see StoreHome.follow).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable

from kgroups.errors import ErrorCode, KafkaError, WriteInDoubt
from kgroups.postgres_store.appends import Append, Appended
from kgroups.postgres_store.fencing import Writer
from kgroups.postgres_store.leader_appends import append_assigned
from kgroups.postgres_store.store_log import StoreLog
from kgroups.postgres_store.thread import StoreThread
from kgroups.topics.placement import INTERNAL_TOPICS

log = logging.getLogger(__name__)

ERROR_LOG_INTERVAL_S = 1.0


class StoreWriter:
    def __init__(
        self,
        thread: StoreThread,
        writer: Callable[[], Writer | None],
        committed: Callable[[StoreLog], None],
        failed: Callable[[StoreLog], None],
        linger_ms: int = 0,
    ) -> None:
        self.thread = thread
        self._writer = writer  # this broker's current incarnation, None without a lease
        self._committed = committed
        self._failed = failed
        self._linger_s = linger_ms / 1000
        self._due: dict[int, tuple[StoreLog, list[asyncio.Future[None]]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._last_error_log = 0.0
        # Per partition, transactions carrying its batches not yet answered,
        # and the number of the last answered one (numbered from 1).
        self._in_flight: Counter[tuple[str, int]] = Counter()
        self._answered: dict[tuple[str, int], int] = {}
        self._answers = 0

    def mark(self) -> int:
        """A moment to ask ``wrote_since`` about."""
        return self._answers

    def wrote_since(self, tp: tuple[str, int], mark: int) -> bool:
        """Whether a transaction carrying ``tp``'s batches is in flight, or
        was answered after ``mark``: a read of the store begun at ``mark``
        may not show what it wrote."""
        return self._in_flight[tp] > 0 or self._answered.get(tp, 0) > mark

    def request(self, slog: StoreLog) -> asyncio.Future[None]:
        """Commit ``slog``'s pending batches; the future completes once they are
        in the store (with the KafkaError if they are not)."""
        done = asyncio.get_running_loop().create_future()
        entry = self._due.get(id(slog))
        if entry is None:
            entry = self._due[id(slog)] = (slog, [])
        entry[1].append(done)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return done

    async def _run(self) -> None:
        took = 0.0  # how long the last transaction took; none yet
        while self._due:
            if took and self._linger_s and self._coordinators_due():
                await asyncio.sleep(min(self._linger_s, took))  # let more join
            started = time.monotonic()
            due, self._due = list(self._due.values()), {}
            appends: list[Append] = []
            owners: list[StoreLog] = []
            for slog, _waiting in due:
                append = slog.take_pending()
                if append is not None:
                    appends.append(append)
                    owners.append(slog)
                    self._in_flight[(slog.topic, slog.partition)] += 1
            try:
                results = await self._commit(appends)
            finally:
                self._answers += 1
                for slog in owners:
                    tp = (slog.topic, slog.partition)
                    self._in_flight[tp] -= 1
                    if not self._in_flight[tp]:
                        del self._in_flight[tp]
                    self._answered[tp] = self._answers
            took = time.monotonic() - started
            # The waiters of a log in this transaction get its outcome, even if
            # the log was given up meanwhile: batches that landed are stored.
            outcomes: dict[int, KafkaError | None] = {}
            for slog, result in zip(owners, results, strict=True):
                if isinstance(result, Appended):
                    slog.committed(result.last_offset)
                    self._committed(slog)
                    outcomes[id(slog)] = None
                else:
                    if result.error_code == ErrorCode.not_leader_or_follower:
                        log.info("%s-%d: %s", slog.topic, slog.partition, result)
                    slog.fail(result)
                    self._failed(slog)
                    outcomes[id(slog)] = result
            for slog, waiting in due:
                error = outcomes.get(id(slog), slog.failed)
                for fut in waiting:
                    if fut.done():
                        continue
                    if error is not None:
                        fut.set_exception(error)
                    else:
                        fut.set_result(None)

    def _coordinators_due(self) -> bool:
        return any(slog.topic in INTERNAL_TOPICS for slog, _waiting in self._due.values())

    async def _commit(self, appends: list[Append]) -> list[Appended | KafkaError]:
        if not appends:
            return []
        writer = self._writer()
        if writer is None:
            error = KafkaError(ErrorCode.not_leader_or_follower, "this broker holds no lease")
            return [error] * len(appends)
        try:
            return await self.thread.run(lambda store: append_assigned(store, writer, appends))
        except KafkaError as e:  # StoreUnavailable: the outcome is unknown
            now = time.monotonic()
            if now - self._last_error_log >= ERROR_LOG_INTERVAL_S:  # once per outage second
                self._last_error_log = now
                log.error("commit to the cluster store failed: %s", e)
            return [WriteInDoubt(f"the store's answer was lost: {e}")] * len(appends)
        except Exception as e:
            log.exception("commit to the cluster store failed")
            return [KafkaError(ErrorCode.kafka_storage_error, str(e))] * len(appends)

    async def close(self) -> None:
        if self._task is not None:
            await self._task
