"""The broker's Prometheus endpoint (``metrics.port``), served from its loop.

Request counts, bytes and connections come from the counters the request path
keeps (broker_stats.py); everything else is computed at scrape time from the
broker's state, read-only: the logs' offsets and sizes, the coordinator's
groups, and the lag of every committed offset. A scrape ends the share
partitions' record locks that ran out (as a fetch or an acknowledgement
would), so that their records are counted where they are.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, cast

from kgroups.metrics.client_telemetry_metrics import write_client_telemetry
from kgroups.metrics.exposition import CONTENT_TYPE, Exposition, partition_labels
from kgroups.metrics.group_metrics import RebalanceCount, write_groups
from kgroups.metrics.http import HttpServer, Page
from kgroups.metrics.lag import PartitionLag, partition_lag, write_lag
from kgroups.metrics.record_time import RecordTimes
from kgroups.metrics.share_group_metrics import (
    ShareGroupRow,
    SharePartitionRow,
    write_share_groups,
)
from kgroups.protocol import apis

if TYPE_CHECKING:
    from kgroups.coordinator.views import GroupView
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.partitions.log import PartitionLog
    from kgroups.share_coordinator.shard import ShareState
    from kgroups.share_partitions import SharePartition
    from kgroups.share_partitions.state_records import StateBatch

log = logging.getLogger(__name__)

_TOPIC = "kafka_server_brokertopicmetrics_"
_REQUEST = "kafka_network_requestmetrics_"
_LOG = "kafka_log_log_"
_SOCKET = "kafka_server_socketservermetrics_"
# Kafka's quota managers, by the key each enforces.
_QUOTA_TYPES = {
    "producer_byte_rate": "Produce",
    "consumer_byte_rate": "Fetch",
    "request_percentage": "Request",
}


async def start_metrics_server(broker: BrokerApi) -> HttpServer | None:
    """Listen on ``metrics.port`` (on the listener's host); None when disabled (-1)."""
    port = broker.config.get_int("metrics.port")
    if port < 0:
        return None
    host, _ = broker.config.listener()
    metrics = BrokerMetrics(broker)

    async def page() -> Page:
        return 200, CONTENT_TYPE, metrics.render().encode()

    server = HttpServer({"/metrics": page})
    bound = await server.start(host, port)
    log.info("serving Prometheus metrics on http://%s:%d/metrics", host or "0.0.0.0", bound)
    return server


class BrokerMetrics:
    def __init__(self, broker: BrokerApi) -> None:
        self._broker = broker
        self._record_times = RecordTimes()
        self._rebalances = RebalanceCount()

    def render(self) -> str:
        out = Exposition()
        self._requests(out)
        self._topics(out)
        self._logs(out)
        groups = self._groups()
        self._rebalances.observe(groups)
        stats = self._broker.stats
        write_groups(
            out,
            groups,
            self._rebalances.total,
            stats.offset_commits,
            self._broker.coordinator.load_times_ms,
        )
        write_lag(out, self._lag(groups))
        write_share_groups(
            out, self._share_groups(), self._share_partitions(), stats.record_acknowledgements
        )
        out.family(_SOCKET + "connection_count", "gauge", "Open client connections.")
        out.sample(_SOCKET + "connection_count", stats.connections)
        out.family(_SOCKET + "connection_creation_total", "counter", "Connections accepted.")
        out.sample(_SOCKET + "connection_creation_total", stats.connections_created)
        self._throttles(out)
        write_client_telemetry(out, self._broker.client_telemetry, self._broker.clock.now_ms())
        return out.text()

    def _throttles(self, out: Exposition) -> None:
        name = "kafka_server_quota_throttle_time_ms"
        out.family(
            name,
            "summary",
            "Throttle time given to clients over a quota, in ms, by quota, user and client id.",
        )
        for (key, user, client_id), given in sorted(self._broker.quotas.throttles.items()):
            labels = {"quota": _QUOTA_TYPES.get(key, key), "user": user, "client_id": client_id}
            out.sample(name + "_sum", given.total_ms, **labels)
            out.sample(name + "_count", given.count, **labels)

    def _requests(self, out: Exposition) -> None:
        stats = self._broker.stats
        served = [(r.name, r.key) for r in apis.SUPPORTED.values() if stats.requests[r.key]]
        out.family(_REQUEST + "requests_total", "counter", "Requests answered, by API.")
        for name, key in served:
            out.sample(_REQUEST + "requests_total", stats.requests[key], request=name)
        out.family(
            _REQUEST + "totaltimems",
            "summary",
            "Time from reading a request to its answer, in ms, by API.",
        )
        for name, key in served:
            out.sample(
                _REQUEST + "totaltimems_sum", stats.request_seconds[key] * 1000, request=name
            )
            out.sample(_REQUEST + "totaltimems_count", stats.requests[key], request=name)

    def _topics(self, out: Exposition) -> None:
        stats = self._broker.stats
        for name, counts, help_text in (
            ("messagesin_total", stats.messages_in, "Records appended, by topic."),
            ("bytesin_total", stats.bytes_in, "Bytes of record batches appended, by topic."),
            ("bytesout_total", stats.bytes_out, "Bytes of record batches fetched, by topic."),
        ):
            out.family(_TOPIC + name, "counter", help_text)
            for topic, value in sorted(counts.items()):
                out.sample(_TOPIC + name, value, topic=topic)

    def _logs(self, out: Exposition) -> None:
        logs = sorted(self._broker.partitions.served(), key=lambda served: served[:2])
        labels = [partition_labels(t, p) for t, p, _ in logs]
        plogs = [plog for _, _, plog in logs]
        sizes = [
            (label, size)
            for label, p in zip(labels, plogs, strict=True)
            if (size := p.size) is not None
        ]
        out.family(_LOG + "size", "gauge", "Bytes of the partition's segments.")
        out.series(_LOG + "size", [label for label, _ in sizes], [size for _, size in sizes])
        for name, help_text, values in (
            ("logendoffset", "The partition's log end offset.", [p.log_end_offset for p in plogs]),
            ("logstartoffset", "The first offset kept.", [p.log_start_offset for p in plogs]),
        ):
            out.family(_LOG + name, "gauge", help_text)
            out.series(_LOG + name, labels, values)

    def _groups(self) -> list[GroupView]:
        coordinator = self._broker.coordinator
        groups: list[GroupView] = []
        for partition in coordinator.loaded_partitions():
            try:
                groups.extend(coordinator.shard(partition).groups())
            except Exception:  # a partition failed or moved since: its groups are not here
                continue
        groups.sort(key=lambda g: g.group_id)
        return groups

    def _share_groups(self) -> list[ShareGroupRow]:
        coordinator = self._broker.coordinator
        rows: list[ShareGroupRow] = []
        for partition in coordinator.loaded_partitions():
            try:
                views = coordinator.shard(partition).share_groups()
            except Exception:  # a partition failed or moved since: its groups are not here
                continue
            rows.extend(ShareGroupRow(v.group_id, v.state, v.members, v.group_epoch) for v in views)
        rows.sort()
        return rows

    def _share_partitions(self) -> list[SharePartitionRow]:
        """Every share partition of this broker; one not used since the broker
        started is read from the state it stored."""
        broker = self._broker
        manager = broker.share_partitions
        manager.expire_locks(broker.clock.now_ms())
        taken = manager.partitions()
        served = {(topic, partition): plog for topic, partition, plog in broker.partitions.served()}
        # Share partitions not used here since the broker started, whose
        # state the share coordinator on this broker holds.
        known = {key for key, _sp in taken}
        elsewhere: dict[tuple[str, uuid.UUID, int], ShareState] = {}
        for shard in broker.share_coordinator.shards():
            for key in shard.share_partitions():
                state = shard.state(key)
                topic = broker.topics.by_id(key[1])
                if (
                    key in known
                    or state is None
                    or state.start_offset < 0
                    or topic is None
                    or (topic.name, key[2]) not in served
                ):
                    continue
                elsewhere[key] = state
        stored = manager.stored_partitions(elsewhere, _start_and_batches)
        if not taken and not stored:
            return []
        rows: list[SharePartitionRow] = []
        for (group, topic_id, partition), sp in taken + stored:
            topic = broker.topics.by_id(topic_id)
            if topic is None:  # deleted: its share partitions go at the next share request
                continue
            plog = served.get((topic.name, partition))
            rows.append(_share_partition_row(group, topic.name, partition, sp, plog))
        rows.sort(key=lambda r: (r.group, r.topic, r.partition))
        return rows

    def _lag(self, groups: list[GroupView]) -> list[PartitionLag]:
        broker = self._broker
        now = broker.clock.now_ms()
        times = self._record_times
        rows: list[PartitionLag] = []
        served = {(topic, partition): plog for topic, partition, plog in broker.partitions.served()}
        for g in groups:
            for tp, committed in sorted(g.offsets.items()):
                plog = served.get((tp.topic, tp.partition))
                if plog is None:
                    continue
                end = plog.high_watermark
                first_ms = None
                if committed.offset < end:
                    at = max(committed.offset, plog.log_start_offset)
                    first_ms = times.lookup(plog, tp.topic, tp.partition, at)
                rows.append(
                    partition_lag(
                        g.group_id, tp.topic, tp.partition, committed.offset, end, first_ms, now
                    )
                )
        times.scrape_done()
        return rows


def _share_partition_row(
    group: str, topic: str, partition: int, sp: SharePartition, plog: PartitionLog | None
) -> SharePartitionRow:
    tally = sp.tally
    lag = None
    if plog is not None:
        # KIP-1226's lag, as DescribeShareGroupOffsets v1 answers it.
        lag = max(0, plog.high_watermark - sp.start_offset - tally.delivery_complete)
    return SharePartitionRow(
        group,
        topic,
        partition,
        sp.start_offset,
        sp.end_offset,
        lag,
        sp.batch_count(),
        tally.acquired,
        tally.acquired_by_delivery,
        sp.config.delivery_count_limit,
        tally.lock_timeouts,
        tally.archived,
    )


def _start_and_batches(state: object) -> tuple[int, tuple[StateBatch, ...]]:
    """A share coordinator's record of a share partition, as the manager keeps one."""
    record = cast("ShareState", state)
    return record.start_offset, record.state_batches
