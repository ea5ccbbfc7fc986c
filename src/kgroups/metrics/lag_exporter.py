"""``kgroups lag-exporter``: consumer lag of any Kafka cluster, for Prometheus.

Speaks only the Kafka protocol. Every poll lists the groups (ListGroups on
every broker), reads their committed offsets (OffsetFetch at each group's
coordinator), the partitions' latest and earliest offsets (ListOffsets at each
leader, all of a leader's partitions of a topic in one request) and, for each
lagging partition, the record at the committed offset (a Fetch of one batch at
the leader), whose timestamp gives the lag in seconds. Those timestamps are
cached by offset, so a poll fetches only for offsets that moved: a Fetch costs
one round trip where bisecting ListOffsets by timestamp would cost twenty.

It also describes every group (ConsumerGroupDescribe for consumer groups,
DescribeGroups for classic ones) to learn which member owns each partition.

``/metrics`` serves the last poll in kafka-lag-exporter's names and labels
(``cluster_name``, and ``member_host``, ``consumer_id``, ``client_id`` of the
member that owns the partition, "unknown" when none does); ``/status``
serves Burrow's status of every group as JSON, its rules evaluated over a
window of the offsets each poll saw change (kgroups.metrics.burrow).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.static.primitive import i32Timedelta

from kgroups.client import consumer_record
from kgroups.client.admin import EARLIEST, LATEST, Admin
from kgroups.client.consumer_protocol import decode_assignment
from kgroups.client.fetch_request import fetch_request
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.clock import Clock, SystemClock
from kgroups.errors import KafkaError
from kgroups.metrics.burrow import Commit, group_status, partition_status
from kgroups.metrics.exposition import CONTENT_TYPE, Exposition, label_text, partition_labels
from kgroups.metrics.http import HttpServer, Page
from kgroups.metrics.lag import PartitionLag, partition_lag, write_lag
from kgroups.metrics.record_time import RecordTimes
from kgroups.protocol import apis
from kgroups.records.timestamps import timestamp_in

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# A partition's owner: the member's host, its member id and its client id.
Owner = tuple[str, str, str]
UNKNOWN_OWNER: Owner = ("unknown", "unknown", "unknown")
_T = TypeVar("_T")

# Requests in flight at once during a poll.
_CONCURRENCY = 16
_NO_WAIT = i32Timedelta.parse(datetime.timedelta(0))


@dataclass
class Snapshot:
    """What one poll saw."""

    rows: list[PartitionLag] = field(default_factory=list)
    latest: dict[TopicPartition, int] = field(default_factory=dict)
    earliest: dict[TopicPartition, int] = field(default_factory=dict)
    poll_ms: float = 0.0
    polled_at_ms: int = 0
    owners: dict[tuple[str, str, int], Owner] = field(default_factory=dict)


class LagCollector:
    """Polls a cluster for the lag of every group."""

    def __init__(self, admin: Admin, clock: Clock) -> None:
        self._admin = admin
        self._clock = clock
        self._times = RecordTimes()
        self._slots = asyncio.Semaphore(_CONCURRENCY)

    async def _bounded(self, call: Awaitable[_T]) -> _T:
        async with self._slots:
            return await call

    async def poll(self) -> Snapshot:
        started = time.perf_counter()
        admin = self._admin
        listed = await admin.list_groups()
        groups = [str(g.group_id) for g in listed]
        answers = await asyncio.gather(
            *(self._bounded(admin.committed(g)) for g in groups), return_exceptions=True
        )
        members = await asyncio.gather(
            *(self._bounded(self._owners(str(g.group_id), g.group_type)) for g in listed)
        )
        owners = {
            (group, *tp): owner
            for group, by_partition in zip(groups, members, strict=True)
            for tp, owner in by_partition.items()
        }
        committed: dict[str, dict[TopicPartition, int]] = {}
        for group, answer in zip(groups, answers, strict=True):
            if isinstance(answer, BaseException):
                log.warning("cannot read the offsets of group %r: %s", group, answer)
            else:
                committed[group] = answer
        partitions = {tp for offsets in committed.values() for tp in offsets}
        await admin.cluster.refresh(sorted({t for t, _ in partitions}))
        latest = await self._log_offsets(partitions, LATEST)
        earliest = await self._log_offsets(partitions, EARLIEST)

        wanted: dict[tuple[str, int, int], None] = {}
        for offsets in committed.values():
            for tp, offset in offsets.items():
                if tp in latest and offset < latest[tp]:
                    wanted[(*tp, max(offset, earliest.get(tp, 0)))] = None
        missing = [key for key in wanted if not self._times.cached(key)[0]]
        found = await asyncio.gather(*(self._bounded(self._timestamp(*k)) for k in missing))
        for key, timestamp in zip(missing, found, strict=True):
            self._times.put(key, timestamp)

        now = self._clock.now_ms()
        rows = []
        for group in sorted(committed):
            for tp, offset in sorted(committed[group].items()):
                if tp not in latest:
                    continue  # a deleted topic, or a partition without a leader
                end = latest[tp]
                first_ms = None
                if offset < end:
                    first_ms = self._times.cached((*tp, max(offset, earliest.get(tp, 0))))[1]
                rows.append(partition_lag(group, *tp, offset, end, first_ms, now))
        self._times.scrape_done()
        elapsed_ms = (time.perf_counter() - started) * 1000
        return Snapshot(rows, latest, earliest, elapsed_ms, now, owners)

    async def _owners(self, group: str, group_type: str) -> dict[TopicPartition, Owner]:
        """Which member owns each assigned partition of the group (none: unknown)."""
        admin = self._admin
        owners: dict[TopicPartition, Owner] = {}
        try:
            if group_type == "consumer":
                described = await admin.describe_consumer_group(group)
                for m in () if described is None else described.members:
                    for t in m.assignment.topic_partitions:
                        for p in t.partitions:
                            owners[t.topic_name, p] = (m.client_host, m.member_id, m.client_id)
                return owners
            classic = await admin.describe(group)
        except (KafkaError, ConnectionError, OSError, TimeoutError) as e:
            log.warning("cannot describe group %r: %s", group, e)
            return owners
        if classic.protocol_type != "consumer":
            return owners
        for member in classic.members:
            if not member.member_assignment:
                continue
            try:
                assigned = decode_assignment(member.member_assignment)
            except Exception as e:  # a client's bytes: a bad one costs its labels only
                log.warning("cannot read an assignment of group %r: %s", group, e)
                continue
            for tp in assigned:
                owners[tp] = (member.client_host, member.member_id, member.client_id)
        return owners

    async def _log_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        """One ListOffsets per topic and leader."""
        topics = self._admin.cluster.metadata.topics
        by_leader: dict[tuple[str, int], list[int]] = {}
        for topic, partition in partitions:
            info = topics.get(topic)
            leader = None if info is None else info.partitions.get(partition)
            if leader is not None and leader >= 0:
                by_leader.setdefault((topic, leader), []).append(partition)
        keys = list(by_leader)
        answers = await asyncio.gather(
            *(
                self._bounded(self._admin.log_offsets(topic, by_leader[topic, leader], timestamp))
                for topic, leader in keys
            ),
            return_exceptions=True,
        )
        out: dict[TopicPartition, int] = {}
        for (topic, _), answer in zip(keys, answers, strict=True):
            if isinstance(answer, BaseException):
                log.warning("cannot list the offsets of %r: %s", topic, answer)
                continue
            out.update(((topic, p), o) for p, o in answer.items())
        return out

    async def _timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp of the record at ``offset``: the first batch from there."""
        try:
            conn = await self._admin.cluster.leader(topic, partition)
            request = fetch_request(
                {consumer_record.TopicPartition(topic, partition): offset},
                max_wait=_NO_WAIT,
                min_bytes=0,
                max_bytes=1,  # KIP-74: still one whole batch
                partition_max_bytes=1,
            )
            response = await conn.send(request, version=conn.version_for(apis.FETCH, 4, 12))
        except (KafkaError, ConnectionError, OSError, TimeoutError) as e:
            log.warning("cannot fetch %s-%d at %d: %s", topic, partition, offset, e)
            return None
        for t in response.responses:
            for p in t.partitions:
                if p.records:
                    return timestamp_in(bytes(p.records), offset)
        return None


class BurrowWindows:
    """Each partition's last ``size`` observed commits (a new one when its
    committed offset changed, timed by the poll that saw it) and its last
    ``size`` log end offsets (one per poll, Burrow's broker offsets), for
    Burrow's rules."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._windows: dict[tuple[str, str, int], deque[Commit]] = {}
        self._log_ends: dict[TopicPartition, deque[int]] = {}

    def observe(self, snapshot: Snapshot) -> None:
        windows: dict[tuple[str, str, int], deque[Commit]] = {}
        for r in snapshot.rows:
            key = (r.group, r.topic, r.partition)
            window = self._windows.get(key) or deque(maxlen=self._size)
            if not window or window[-1].offset != r.committed:
                window.append(Commit(r.committed, r.lag, snapshot.polled_at_ms))
            windows[key] = window
        self._windows = windows
        log_ends: dict[TopicPartition, deque[int]] = {}
        for tp, end in snapshot.latest.items():
            ends = self._log_ends.get(tp) or deque(maxlen=self._size)
            ends.append(end)
            log_ends[tp] = ends
        self._log_ends = log_ends

    def status(self, snapshot: Snapshot, now_ms: int) -> list[dict[str, Any]]:
        """Burrow's consumer status of every group, in the shape of its HTTP API."""
        by_group: dict[str, list[dict[str, Any]]] = {}
        for r in snapshot.rows:
            window = self._windows.get((r.group, r.topic, r.partition), deque())
            ends = self._log_ends.get((r.topic, r.partition), ())
            status = partition_status(window, r.lag, now_ms, ends)
            by_group.setdefault(r.group, []).append(
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "status": status,
                    "start": _commit(window[0]) if window else None,
                    "end": _commit(window[-1]) if window else None,
                    "current_lag": r.lag,
                    "complete": len(window) / self._size,
                }
            )
        out = []
        for group, partitions in by_group.items():
            worst = max(partitions, key=lambda p: p["current_lag"])
            out.append(
                {
                    "group": group,
                    "status": group_status([p["status"] for p in partitions]),
                    "complete": min(p["complete"] for p in partitions),
                    "partitions": [p for p in partitions if p["status"] != "OK"],
                    "partition_count": len(partitions),
                    "maxlag": worst,
                    "totallag": sum(p["current_lag"] for p in partitions),
                }
            )
        return out


def _commit(c: Commit) -> dict[str, int | None]:
    return {"offset": c.offset, "lag": c.lag, "timestamp": c.t_ms}


DEFAULT_CLUSTER_NAME = "default"


class LagExporter:
    """Polls every ``interval_s`` in the background and serves the last poll."""

    def __init__(
        self,
        bootstrap: str,
        interval_s: float = 30.0,
        window: int = 10,
        clock: Clock | None = None,
        security: ClientSecurity = PLAINTEXT,
        cluster_name: str = DEFAULT_CLUSTER_NAME,
    ) -> None:
        self._cluster = {"cluster_name": cluster_name}
        self._clock = clock or SystemClock()
        self._admin = Admin(bootstrap, security=security)
        self._collector = LagCollector(self._admin, self._clock)
        self._interval_s = interval_s
        self._windows = BurrowWindows(window)
        self._snapshot = Snapshot()
        self._errors = 0
        self._polls = 0
        self._polled = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._server = HttpServer({"/metrics": self._metrics, "/status": self._status})

    async def start(self, host: str, port: int) -> int:
        """Listen (port 0: any free port) and start polling; the bound port."""
        bound = await self._server.start(host, port)
        self._task = asyncio.create_task(self._poll_loop())
        return bound

    async def close(self) -> None:
        await self._server.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._admin.close()

    async def polled(self) -> None:
        """Wait for the next poll to finish."""
        self._polled.clear()
        await self._polled.wait()

    async def _poll_loop(self) -> None:
        while True:
            try:
                self._snapshot = await self._collector.poll()
                self._windows.observe(self._snapshot)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._errors += 1
                log.warning("lag poll failed: %s", e)
            self._polls += 1
            self._polled.set()
            await asyncio.sleep(self._interval_s)

    async def _metrics(self) -> Page:
        snap = self._snapshot
        out = Exposition()
        cluster = label_text(self._cluster.items())
        owner_labels: dict[Owner, str] = {}

        def member_labels(r: PartitionLag) -> str:
            owner = snap.owners.get((r.group, r.topic, r.partition), UNKNOWN_OWNER)
            text = owner_labels.get(owner)
            if text is None:
                host, consumer_id, client_id = owner
                text = owner_labels[owner] = label_text(
                    (("member_host", host), ("consumer_id", consumer_id), ("client_id", client_id))
                )
            return f"{cluster},{text}"

        write_lag(out, snap.rows, self._cluster, member_labels)
        for name, offsets, help_text in (
            ("kafka_partition_latest_offset", snap.latest, "Latest offset of the partition."),
            ("kafka_partition_earliest_offset", snap.earliest, "Earliest offset kept."),
        ):
            out.family(name, "gauge", help_text)
            ordered = sorted(offsets.items())
            out.series(
                name,
                [f"{cluster},{partition_labels(*tp)}" for tp, _ in ordered],
                [o for _, o in ordered],
            )
        out.family("kafka_consumergroup_poll_time_ms", "gauge", "Duration of the last poll.")
        out.sample("kafka_consumergroup_poll_time_ms", snap.poll_ms, **self._cluster)
        out.family("kafka_consumergroup_polls_total", "counter", "Polls of the cluster.")
        out.sample("kafka_consumergroup_polls_total", self._polls)
        out.family("kafka_consumergroup_poll_errors_total", "counter", "Polls that failed.")
        out.sample("kafka_consumergroup_poll_errors_total", self._errors)
        return 200, CONTENT_TYPE, out.text().encode()

    async def _status(self) -> Page:
        groups = self._windows.status(self._snapshot, self._clock.now_ms())
        body = {"error": False, "message": "consumer status returned", "groups": groups}
        return 200, "application/json", json.dumps(body).encode()


async def run(
    bootstrap: str,
    host: str,
    port: int,
    interval_s: float,
    window: int,
    security: ClientSecurity = PLAINTEXT,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
) -> None:
    """``kgroups lag-exporter``: serve until interrupted."""
    exporter = LagExporter(
        bootstrap, interval_s, window, security=security, cluster_name=cluster_name
    )
    bound = await exporter.start(host, port)
    print(f"serving lag metrics on http://{host or '0.0.0.0'}:{bound}/metrics", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await exporter.close()
