"""The share consumer, asyncio edition (Kafka's KafkaShareConsumer, KIP-932).

    consumer = AsyncShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "jobs"})
    consumer.subscribe(["jobs"])
    while True:
        for record in await consumer.poll(1.0):   # accepted at the next poll
            handle(record)

Members of a share group consume the same partitions together; the broker
hands each record to one member at a time, locked for a while, and the
member says what became of it: ACCEPT (done), RELEASE (deliver it again),
REJECT (never again). With ``share.acknowledgement.mode=implicit`` (the
default) every record a poll returned is accepted at the next poll, commit
or close. With ``explicit`` the application calls ``acknowledge`` for each
record, and must have done so for all of them before it polls again.

Acknowledgements ride on the next ShareFetch to the broker the records came
from, or go at once with ShareAcknowledge on ``commit_sync`` /
``commit_async``. While polls hand out records a fetch already brought, no
fetch goes, and acknowledgements wait for the one that follows them unless
half the lock of the records has passed: then they go in a ShareAcknowledge,
from a timer too, should the application stop polling. ``close``
acknowledges what is due, closes the share sessions (the broker releases
what this member still holds) and leaves the group. The group membership
runs as a task on the loop the consumer is used from; ``ShareConsumer`` is
the blocking edition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from itertools import groupby
from operator import itemgetter
from typing import Any

from kgroups.client.cluster import ClusterClient
from kgroups.client.consumer_record import TopicPartition
from kgroups.client.coordinator_link import CoordinatorLink, open_connection
from kgroups.client.exceptions import RetriableError
from kgroups.client.share_acknowledgements import AckBatch, Acknowledgements
from kgroups.client.share_completed_fetch import acquired_records
from kgroups.client.share_consumer_config import ShareConsumerConfig
from kgroups.client.share_membership import ShareMembership, SharePartition
from kgroups.client.share_record import GAP, AcknowledgeType, ShareConsumerRecord
from kgroups.client.share_session import ShareSession
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis

__all__ = ["AcknowledgementCommitCallback", "AsyncShareConsumer"]

log = logging.getLogger(__name__)

AcknowledgementCommitCallback = Callable[
    [dict[TopicPartition, set[int]], Exception | None], Awaitable[None] | None
]
"""Hears how acknowledgements went: the offsets of one partition, and their
error (None when they were taken). Kafka's AcknowledgementCommitCallback."""

AckResults = dict[TopicPartition, Exception | None]

_METADATA_RETRY = 0.1
_TOPIC_PARTITION = itemgetter(0, 1)
_OFFSET = itemgetter(2)
_ACCEPT = int(AcknowledgeType.ACCEPT)
_DEFAULT_LOCK_MS = 30_000
"""Kafka's group.share.record.lock.duration.ms, for a broker that does not say."""


def _session_ended() -> KafkaError:
    """Acknowledgements for a session that ended cannot be sent."""
    return KafkaError(
        ErrorCode.share_session_not_found,
        "the share session ended: the broker released the records it held",
    )


_METADATA_ERRORS = (
    ErrorCode.not_leader_or_follower,
    ErrorCode.unknown_topic_or_partition,
    ErrorCode.unknown_topic_id,
    ErrorCode.fenced_leader_epoch,
)
"""A partition's leader moved, or its topic changed: look at the metadata again."""


class AsyncShareConsumer:
    def __init__(self, config: Mapping[str, object]) -> None:
        self.config = ShareConsumerConfig.from_dict(config)
        self._clock = time.monotonic
        self._cluster = ClusterClient(
            self.config.bootstrap_servers, self.config.client_id, self.config.security
        )
        client_id, security = self.config.client_id, self.config.security

        async def connect(host: str, port: int) -> Any:
            return await open_connection(host, port, client_id, security)

        self._changed = asyncio.Event()
        link = CoordinatorLink(
            self.config.group_id,
            self._cluster,
            connect=connect,
            request_timeout_ms=self.config.request_timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
        )
        self._membership = ShareMembership(
            link,
            rack_id=self.config.client_rack,
            request_timeout_ms=self.config.request_timeout_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
            on_assignment=self._changed.set,
        )
        self._sessions: dict[int, ShareSession] = {}
        self._buffer: list[ShareConsumerRecord] = []
        """Records fetched, not yet handed out: from ``_handed_out`` on (a slice
        a poll, not a record at a time); emptied when all are."""
        self._handed_out = 0
        self._source: dict[TopicPartition, int] = {}
        """The broker each partition's records were acquired from: their acks go there."""
        self._delivered: list[ShareConsumerRecord] = []
        """Records the last poll returned, not yet acknowledged."""
        self._delivered_keys: set[tuple[TopicPartition, int]] | None = None
        """Their partitions and offsets, made when first needed."""
        self._acked: dict[tuple[TopicPartition, int], int] = {}
        """The types acknowledged so far for some of them (explicit mode)."""
        self._pending: dict[TopicPartition, Acknowledgements] = {}
        self._callback: AcknowledgementCommitCallback | None = None
        self._metadata_refreshed_at = float("-inf")
        self._metadata_stale = False
        self.acquisition_lock_timeout_ms: int | None = None
        """How long the broker locks the records it hands out (from the last
        ShareFetch; Kafka's acquisitionLockTimeoutMs()); None before one."""
        self._commit_tasks: set[asyncio.Task[AckResults]] = set()
        self._ack_due_by = float("inf")
        """When the acknowledgements of buffered records must go at the latest
        (half their lock after the fetch that acquired them)."""
        self._ack_timer: asyncio.TimerHandle | None = None
        self._closed = False

    # -- what to consume ---------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for these topics (or change the subscription)."""
        self._check_open()
        chosen = tuple(sorted({topics} if isinstance(topics, str) else set(topics)))
        if not chosen:
            raise ValueError("subscribe to at least one topic; unsubscribe() leaves the group")
        self._metadata_refreshed_at = float("-inf")
        self._membership.subscribe(chosen)

    async def unsubscribe(self) -> None:
        """Acknowledge what is due, close the share sessions and leave the group
        (a later subscribe joins it again, as a new member epoch)."""
        self._check_open()
        self._settle_delivered()
        self._buffer, self._handed_out = [], 0  # still acquired: released as the sessions close
        self._delivered, self._delivered_keys, self._acked = [], None, {}
        await self._acknowledge_all(closing=True)
        await self._membership.leave()

    def subscription(self) -> set[str]:
        return set(self._membership.subscription)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the coordinator gave this member (shared with others)."""
        names = self._topic_names()
        return {TopicPartition(names[t], p) for t, p in self._membership.assignment if t in names}

    def set_acknowledgement_commit_callback(
        self, callback: AcknowledgementCommitCallback | None
    ) -> None:
        self._callback = callback

    # -- poll --------------------------------------------------------------------

    async def poll(self, timeout: float) -> list[ShareConsumerRecord]:
        """Records acquired for this member, at most ``max.poll.records``; an
        empty list when ``timeout`` seconds pass without any."""
        self._check_open()
        self._membership.check_fatal()
        if not self._membership.subscription:
            raise RuntimeError("Consumer is not subscribed to any topics.")
        if self.config.explicit_acknowledgement and len(self._acked) < len(self._delivered):
            raise RuntimeError("All records must be acknowledged in explicit acknowledgement mode.")
        self._settle_delivered()
        if self._buffer and self._pending:
            # No fetch this time: they wait for the one that follows the buffered
            # records, unless their locks would run out first.
            self._defer_acknowledgements()
        if not self._buffer:
            self._ack_due_by = float("inf")  # the next fetch carries them
        deadline = self._clock() + max(0.0, timeout)
        while not self._buffer:
            self._membership.check_fatal()
            remaining = deadline - self._clock()
            if not await self._fetch(remaining) and remaining > 0:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(remaining, _METADATA_RETRY))
            if self._clock() >= deadline:
                break
        start = self._handed_out
        out = self._buffer[start : start + self.config.max_poll_records]
        self._handed_out += len(out)
        if self._handed_out >= len(self._buffer):
            self._buffer, self._handed_out = [], 0
        self._delivered, self._delivered_keys, self._acked = out, None, {}
        return out

    def acknowledge(
        self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT
    ) -> None:
        """Say what became of a record the last poll returned (explicit mode);
        it goes with the next poll or commit."""
        self._check_open()
        if not self.config.explicit_acknowledgement:
            raise RuntimeError("Implicit acknowledgement of delivery is being used.")
        self.acknowledge_offset(record.topic, record.partition, record.offset, type)

    def acknowledge_offset(
        self,
        topic: str,
        partition: int,
        offset: int,
        type: AcknowledgeType = AcknowledgeType.ACCEPT,
    ) -> None:
        """``acknowledge`` by the record's coordinates (Kafka 4.2's
        acknowledge(topic, partition, offset, type))."""
        self._check_open()
        if not self.config.explicit_acknowledgement:
            raise RuntimeError("Implicit acknowledgement of delivery is being used.")
        key = (TopicPartition(topic, partition), offset)
        if self._delivered_keys is None:
            self._delivered_keys = {(r.topic_partition, r.offset) for r in self._delivered}
        if key not in self._delivered_keys:
            raise RuntimeError("The record cannot be acknowledged.")
        self._acked[key] = int(AcknowledgeType(type))

    def _defer_acknowledgements(self) -> None:
        """Keep the acknowledgements for the next ShareFetch; send them with
        ShareAcknowledge once they are due (at once, or when a timer fires,
        should the application poll no more before then)."""
        wait = self._ack_due_by - self._clock()
        if wait <= 0:
            self._start_acknowledging()
            return
        if self._ack_timer is None:
            self._ack_timer = asyncio.get_running_loop().call_later(wait, self._acknowledge_due)

    def _acknowledge_due(self) -> None:
        self._ack_timer = None
        if self._closed or not self._pending:
            return
        if self._ack_due_by <= self._clock():
            self._start_acknowledging()
        else:
            self._defer_acknowledgements()

    def _settle_delivered(self) -> None:
        """Queue the acknowledgements of the last poll's records: in implicit mode
        all of them accepted, in explicit mode those acknowledged."""
        if not self._delivered:
            return
        pending = self._pending
        if not self.config.explicit_acknowledgement:
            # A poll's records come in runs of one partition: one step a run.
            for (topic, partition), run in groupby(self._delivered, _TOPIC_PARTITION):
                tp = TopicPartition(topic, partition)
                acks = pending.get(tp)
                if acks is None:
                    acks = pending[tp] = Acknowledgements()
                acks.add_all(map(_OFFSET, run), _ACCEPT)
            self._delivered, self._delivered_keys = [], None
            return
        for (tp, offset), ack_type in self._acked.items():
            pending.setdefault(tp, Acknowledgements()).add(offset, ack_type)
        acked = self._acked
        self._delivered = [r for r in self._delivered if (r.topic_partition, r.offset) not in acked]
        self._delivered_keys, self._acked = None, {}

    # -- fetching ----------------------------------------------------------------

    def _topic_names(self) -> dict[Any, str]:
        return {
            info.topic_id: name
            for name, info in self._cluster.metadata.topics.items()
            if info.topic_id is not None
        }

    async def _refresh_metadata(self, force: bool) -> None:
        now = self._clock()
        stale = now - self._metadata_refreshed_at >= self.config.metadata_max_age_ms / 1000
        retry = now - self._metadata_refreshed_at >= self.config.retry_backoff_ms / 1000
        if not (stale or (force and retry)):
            return
        self._metadata_refreshed_at = now
        self._metadata_stale = False
        topics = sorted(self._membership.subscription)
        if topics:
            try:
                await self._cluster.refresh(topics)
            except OSError as e:
                log.info("metadata refresh failed: %s", e)

    def _wanted_by_node(self) -> dict[int, frozenset[SharePartition]]:
        """The assigned partitions, by the broker that leads them."""
        names = self._topic_names()
        out: dict[int, set[SharePartition]] = {}
        for topic_id, partition in self._membership.assignment:
            name = names.get(topic_id)
            leader = None if name is None else self._cluster.leader_id(name, partition)
            if leader is None:
                self._metadata_stale = True  # read again at the next fetch
            else:
                out.setdefault(leader, set()).add((topic_id, partition))
        return {node: frozenset(ps) for node, ps in out.items()}

    def _session(self, node: int) -> ShareSession:
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = ShareSession(node)
        return session

    def _acks_for(self, node: int) -> dict[TopicPartition, Acknowledgements]:
        """Take the pending acknowledgements due at ``node``."""
        due = {tp: a for tp, a in self._pending.items() if self._source.get(tp) == node and a}
        for tp in due:
            del self._pending[tp]
        return due

    def _wire_acks(
        self, acks: Mapping[TopicPartition, Acknowledgements]
    ) -> dict[SharePartition, list[AckBatch]]:
        ids = {name: info.topic_id for name, info in self._cluster.metadata.topics.items()}
        out: dict[SharePartition, list[AckBatch]] = {}
        for tp, a in acks.items():
            topic_id = ids.get(tp.topic)
            if topic_id is not None:
                out[(topic_id, tp.partition)] = a.batches()
        return out

    async def _fetch(self, remaining: float) -> bool:
        """One ShareFetch to each broker with partitions or acknowledgements for
        it; False when there was nothing to ask anyone."""
        names = self._topic_names()
        unknown = any(t not in names for t, _ in self._membership.assignment)
        await self._refresh_metadata(force=unknown or self._metadata_stale)
        wanted = self._wanted_by_node()
        nodes = set(wanted) | {n for n, s in self._sessions.items() if s.partitions}
        nodes |= {self._source[tp] for tp, a in self._pending.items() if a and tp in self._source}
        if not nodes:
            return False
        max_wait = int(min(self.config.fetch_max_wait_ms, max(0.0, remaining) * 1000))
        sent_at = self._clock()
        await asyncio.gather(
            *(self._fetch_from(n, wanted.get(n, frozenset()), max_wait) for n in sorted(nodes))
        )
        if self._buffer:
            # Locks start when the broker acquires, after the fetch was sent.
            lock_ms = self.acquisition_lock_timeout_ms or _DEFAULT_LOCK_MS
            self._ack_due_by = min(self._ack_due_by, sent_at + lock_ms / 2000)
        return True

    async def _fetch_from(
        self, node: int, wanted: frozenset[SharePartition], max_wait_ms: int
    ) -> None:
        session = self._session(node)
        async with session.lock:
            acks = self._acks_for(node)
            if acks and not session.open:
                await self._report(acks, _session_ended())
                acks = {}
            # Records of a partition no longer assigned are acknowledged before
            # the fetch forgets it (a fetch naming it would acquire more).
            ids = {name: info.topic_id for name, info in self._cluster.metadata.topics.items()}
            leaving = {
                tp: a for tp, a in acks.items() if (ids.get(tp.topic), tp.partition) not in wanted
            }
            if leaving:
                acks = {tp: a for tp, a in acks.items() if tp not in leaving}
                await self._send_acknowledgements(session, leaving, closing=False)
                if not session.open:
                    await self._report(acks, _session_ended())
                    acks = {}
            if not wanted and not acks and not session.partitions:
                return
            request = session.fetch_request(
                self.config.group_id,
                self._membership.member_id,
                wanted,
                self._wire_acks(acks),
                max_wait_ms=max_wait_ms if wanted else 0,
                min_bytes=self.config.fetch_min_bytes,
                max_bytes=self.config.fetch_max_bytes,
                max_records=self.config.max_poll_records,
                record_limit=self.config.record_limit,
            )
            try:
                conn = await self._cluster.connection(node)
                version = conn.version_for(apis.SHARE_FETCH, 1, 2)
                response = await asyncio.wait_for(
                    conn.send(request, version=version),
                    self.config.request_timeout_ms / 1000 + max_wait_ms / 1000,
                )
            except (OSError, KafkaError) as e:
                # A lost connection ends the session on the broker too.
                session.reset()
                await self._report(acks, e)
                log.info("share fetch from broker %s failed: %s", node, e)
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                return
            session.on_answer(response.error_code, wanted)
            if response.acquisition_lock_timeout is not None:
                lock = response.acquisition_lock_timeout.total_seconds() * 1000
                self.acquisition_lock_timeout_ms = int(lock) if lock > 0 else None
            if response.error_code != ErrorCode.none:
                error = KafkaError(response.error_code, response.error_message)
                await self._report(acks, error)
                log.info("share fetch from broker %s: %s", node, response.error_code.name)
                await asyncio.sleep(self.config.retry_backoff_ms / 1000)
                return
            names = self._topic_names()
            results: AckResults = {}
            for topic in response.responses:
                name = names.get(topic.topic_id)
                if name is None:
                    continue
                for p in topic.partitions:
                    tp = TopicPartition(name, p.partition_index)
                    if tp in acks:
                        code = ErrorCode(p.acknowledge_error_code)
                        results[tp] = (
                            None
                            if code == ErrorCode.none
                            else KafkaError(code, p.acknowledge_error_message)
                        )
                    if p.error_code != ErrorCode.none:
                        log.info("share fetch of %s: %s", tp, p.error_code.name)
                        if p.error_code in _METADATA_ERRORS:
                            self._metadata_stale = True
                        continue
                    self._take(node, tp, p)
            await self._report(acks, None, results)

    def _take(self, node: int, tp: TopicPartition, partition: Any) -> None:
        records, gaps = acquired_records(
            tp, partition.records, partition.acquired_records, check_crcs=self.config.check_crcs
        )
        if records or gaps:
            self._source[tp] = node
        self._buffer.extend(records)
        for offset in gaps:
            self._pending.setdefault(tp, Acknowledgements()).add(offset, GAP)

    async def _report(
        self,
        acks: Mapping[TopicPartition, Acknowledgements],
        error: Exception | None,
        results: AckResults | None = None,
    ) -> AckResults:
        outcome: AckResults = {
            tp: error if results is None else results.get(tp, error) for tp in acks
        }
        if self._callback is not None:
            for tp, e in outcome.items():
                done = self._callback({tp: acks[tp].offsets()}, e)
                if asyncio.iscoroutine(done):
                    await done
        return outcome

    # -- committing --------------------------------------------------------------

    async def commit_sync(self, timeout: float | None = None) -> AckResults:
        """Send the acknowledgements due (ShareAcknowledge) and wait: each
        partition's error, None where they were taken."""
        self._check_open()
        self._settle_delivered()
        seconds = timeout if timeout is not None else self.config.default_api_timeout_ms / 1000
        return await asyncio.wait_for(self._acknowledge_all(closing=False), seconds)

    def commit_async(self) -> asyncio.Task[AckResults]:
        """Send the acknowledgements due without waiting; the acknowledgement
        commit callback hears how it went."""
        self._check_open()
        self._settle_delivered()
        return self._start_acknowledging(lazily=False)

    def _start_acknowledging(self, *, lazily: bool = True) -> asyncio.Task[AckResults]:
        acknowledging = self._acknowledge_all(closing=False, lazily=lazily)
        task = asyncio.get_running_loop().create_task(acknowledging)
        self._commit_tasks.add(task)
        task.add_done_callback(self._commit_tasks.discard)
        return task

    async def _acknowledge_all(self, *, closing: bool, lazily: bool = False) -> AckResults:
        """Send the acknowledgements due, each broker's in its session: those due
        now (a fetch that starts meanwhile does not carry them), or ``lazily``
        those due once the session is free (a fetch may have carried them)."""
        nodes = {self._source[tp] for tp, a in self._pending.items() if a and tp in self._source}
        if closing:
            nodes |= {n for n, s in self._sessions.items() if s.open}
        due = {node: None if lazily else self._acks_for(node) for node in sorted(nodes)}
        results: AckResults = {}
        for outcome in await asyncio.gather(
            *(self._acknowledge_at(node, acks, closing) for node, acks in due.items())
        ):
            results.update(outcome)
        return results

    async def _acknowledge_at(
        self, node: int, acks: dict[TopicPartition, Acknowledgements] | None, closing: bool
    ) -> AckResults:
        session = self._session(node)
        async with session.lock:
            if acks is None:
                acks = self._acks_for(node)
            if not session.open:
                # The session ended: the broker released those records.
                return await self._report(acks, _session_ended())
            if not acks and not closing:
                return {}
            return await self._send_acknowledgements(session, acks, closing=closing)

    async def _send_acknowledgements(
        self,
        session: ShareSession,
        acks: Mapping[TopicPartition, Acknowledgements],
        *,
        closing: bool,
    ) -> AckResults:
        """One ShareAcknowledge in an open session (its lock held)."""
        request = session.acknowledge_request(
            self.config.group_id, self._membership.member_id, self._wire_acks(acks), closing=closing
        )
        try:
            conn = await self._cluster.connection(session.node_id)
            version = conn.version_for(apis.SHARE_ACKNOWLEDGE, 1, 2)
            response = await asyncio.wait_for(
                conn.send(request, version=version), self.config.request_timeout_ms / 1000
            )
        except (OSError, KafkaError) as e:
            session.reset()
            return await self._report(acks, e)
        if closing:
            session.reset()
        else:
            session.on_answer(response.error_code, None)
        if response.error_code != ErrorCode.none:
            error = KafkaError(response.error_code, response.error_message)
            return await self._report(acks, error)
        names = self._topic_names()
        results: AckResults = {}
        for topic in response.responses:
            name = names.get(topic.topic_id)
            for p in topic.partitions:
                if name is not None and p.error_code != ErrorCode.none:
                    results[TopicPartition(name, p.partition_index)] = KafkaError(
                        p.error_code, p.error_message
                    )
        return await self._report(acks, None, results)

    # -- closing -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the share consumer is closed")

    async def close(self, timeout: float = 30.0) -> None:
        """Acknowledge what is due, close the share sessions (the broker releases
        the records this member still holds) and leave the group."""
        if self._closed:
            return
        self._closed = True
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        try:
            if self._commit_tasks:
                await asyncio.wait(set(self._commit_tasks), timeout=timeout)
            self._settle_delivered()
            with contextlib.suppress(TimeoutError, RetriableError, OSError):
                await asyncio.wait_for(self._acknowledge_all(closing=True), timeout)
            await self._membership.leave()
        finally:
            await self._membership.link.close()
            await self._cluster.close()

    async def __aenter__(self) -> AsyncShareConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
