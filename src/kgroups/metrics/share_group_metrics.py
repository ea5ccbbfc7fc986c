"""Share groups' metrics (KIP-932): each share group's members and state, and
each share partition's records, from rows the broker reads off its state.

Where Kafka has the metric, the name is Kafka's as the JMX exporter renders
it (SharePartitionMetrics' InFlightMessageCount, InFlightBatchCount and
AcquisitionLockTimeoutPerSec, ShareGroupMetrics' RecordAcknowledgementsPerSec,
group-coordinator-metrics' share-group-count).
The rest, which Kafka does not export, are named after the consumer-group
families (``kafka_sharegroup_*`` beside ``kafka_consumergroup_*``). The
rows come from counters each share partition keeps as its records change
state, so a scrape reads a few numbers per share partition whatever the
number of records in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from kgroups.metrics.exposition import Exposition, group_partition_labels

# Kafka's ShareGroupState values.
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")
# Acknowledgement type ids and the names Kafka's ackType tag gives them; a GAP
# (0) is not counted, as in Kafka.
ACK_TYPES = {1: "Accept", 2: "Release", 3: "Reject", 4: "Renew"}

_COORDINATOR = "kafka_server_group_coordinator_metrics_"
_KAFKA_PARTITION = "kafka_server_sharepartitionmetrics_"
_KAFKA_GROUPS = "kafka_server_sharegroupmetrics_"
_GROUP = "kafka_sharegroup_"
_PARTITION = "kafka_sharegroup_partition_"


class ShareGroupRow(NamedTuple):
    group: str
    state: str
    members: int
    group_epoch: int


class SharePartitionRow(NamedTuple):
    group: str
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    """The offset after the last record fetched into the share partition."""
    lag: int | None
    """None: the partition's high watermark is not known here."""
    batches: int
    acquired: int
    acquired_by_delivery: Mapping[int, int]
    delivery_count_limit: int
    lock_timeouts: int
    archived: Mapping[str, int]
    """Deliveries ended archived, by reason."""


def write_share_groups(
    out: Exposition,
    groups: Sequence[ShareGroupRow],
    partitions: Sequence[SharePartitionRow],
    acknowledgements: Mapping[int, int],
) -> None:
    """``groups`` sorted by group, ``partitions`` by group, topic, partition;
    ``acknowledgements``: records acknowledged by type id, since the start."""
    name = _KAFKA_GROUPS + "recordacknowledgements_total"
    out.family(name, "counter", "Records share consumers acknowledged, by acknowledgement type.")
    for type_id, ack_type in ACK_TYPES.items():
        out.sample(name, acknowledgements.get(type_id, 0), ack_type=ack_type)
    by_state = dict.fromkeys(SHARE_GROUP_STATES, 0)
    for g in groups:
        by_state[g.state] = by_state.get(g.state, 0) + 1
    out.family(_COORDINATOR + "share_group_count", "gauge", "Share groups in each state.")
    for state, count in by_state.items():
        out.sample(_COORDINATOR + "share_group_count", count, state=state)
    out.family(_GROUP + "members", "gauge", "Members of the share group.")
    for g in groups:
        out.sample(_GROUP + "members", g.members, group=g.group)
    out.family(_GROUP + "state", "gauge", "1 for the share group's current state.")
    for g in groups:
        out.sample(_GROUP + "state", 1, group=g.group, state=g.state)
    out.family(_GROUP + "epoch", "gauge", "The share group's group epoch.")
    for g in groups:
        out.sample(_GROUP + "epoch", g.group_epoch, group=g.group)
    _write_partitions(out, partitions)


def _write_partitions(out: Exposition, rows: Sequence[SharePartitionRow]) -> None:
    labels = [group_partition_labels(r.group, r.topic, r.partition) for r in rows]
    for name, kind, help_text, values in (
        (
            _KAFKA_PARTITION + "inflightmessagecount",
            "gauge",
            "Records from the share-partition start offset to its end offset, in any state.",
            [r.end_offset - r.start_offset for r in rows],
        ),
        (
            _KAFKA_PARTITION + "inflightbatchcount",
            "gauge",
            "In-flight batches the share partition keeps.",
            [r.batches for r in rows],
        ),
        (
            _KAFKA_PARTITION + "acquisitionlocktimeout_total",
            "counter",
            "Records whose acquisition lock ran out before they were acknowledged.",
            [r.lock_timeouts for r in rows],
        ),
        (
            _PARTITION + "start_offset",
            "gauge",
            "Share-partition start offset: records before it are all acknowledged or archived.",
            [r.start_offset for r in rows],
        ),
        (
            _PARTITION + "end_offset",
            "gauge",
            "Share-partition end offset: the offset after the last record fetched.",
            [r.end_offset for r in rows],
        ),
        (
            _PARTITION + "acquired_records",
            "gauge",
            "Records acquired by a member and not yet acknowledged.",
            [r.acquired for r in rows],
        ),
    ):
        out.family(name, kind, help_text)
        out.series(name, labels, values)

    known = [(text, r.lag) for text, r in zip(labels, rows, strict=True) if r.lag is not None]
    out.family(
        _PARTITION + "lag",
        "gauge",
        "Records from the start offset to the high watermark not yet acknowledged or archived.",
    )
    out.series(_PARTITION + "lag", [t for t, _ in known], [lag for _, lag in known])

    by_delivery: list[str] = []
    counts: list[int] = []
    for text, r in zip(labels, rows, strict=True):
        seen = r.acquired_by_delivery
        deliveries: Iterable[int] = range(1, r.delivery_count_limit + 1)
        if seen and max(seen) > r.delivery_count_limit:  # counted under a higher limit
            deliveries = sorted(set(deliveries) | seen.keys())
        for delivery in deliveries:
            by_delivery.append(f'{text},delivery_count="{delivery}"')
            counts.append(seen.get(delivery, 0))
    name = _PARTITION + "acquired_records_by_delivery_count"
    out.family(name, "gauge", "Acquired records, by the delivery they are on.")
    out.series(name, by_delivery, counts)

    by_reason: list[str] = []
    archived: list[int] = []
    for text, r in zip(labels, rows, strict=True):
        for reason, count in r.archived.items():
            by_reason.append(f'{text},reason="{reason}"')
            archived.append(count)
    name = _PARTITION + "archived_records_total"
    out.family(
        name,
        "counter",
        "Delivered records archived, by reason: delivery count limit, rejected, gap.",
    )
    out.series(name, by_reason, archived)
