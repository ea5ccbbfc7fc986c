"""Consumer lag, in offsets and in seconds, and its Prometheus families.

Shared by the broker's endpoint and ``kgroups lag-exporter``; the names are
kafka-lag-exporter's. Lag in offsets is the partition's end offset (high
watermark) minus the committed offset. Lag in seconds is the age of the first
record not yet consumed, the record at the committed offset: ``now`` minus its
timestamp (0 when nothing is left to consume, NaN when its timestamp is
unknown, as kafka-lag-exporter reports an estimate it cannot make).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

from kgroups.metrics.exposition import Exposition, group_partition_labels

# The labels of one group, one group's topic, and one group's partition: extra
# labels each family carries beside its own (``kgroups lag-exporter`` adds
# kafka-lag-exporter's cluster and member labels), none by default.
Extra = dict[str, str]

UNKNOWN = math.nan


class PartitionLag(NamedTuple):
    group: str
    topic: str
    partition: int
    committed: int
    end_offset: int
    lag: int
    lag_seconds: float


def partition_lag(
    group: str,
    topic: str,
    partition: int,
    committed: int,
    end_offset: int,
    first_unconsumed_ms: int | None,
    now_ms: int,
) -> PartitionLag:
    """``first_unconsumed_ms``: the timestamp of the record at the committed offset
    (or the log start, when retention removed that record), None if unknown."""
    lag = max(0, end_offset - committed)
    if lag == 0:
        seconds = 0.0
    elif first_unconsumed_ms is None:
        seconds = UNKNOWN
    else:
        seconds = max(0, now_ms - first_unconsumed_ms) / 1000
    return PartitionLag(group, topic, partition, committed, end_offset, lag, seconds)


def write_lag(
    out: Exposition,
    rows: Iterable[PartitionLag],
    extra: Extra | None = None,
    partition_extra: Callable[[PartitionLag], str] | None = None,
) -> None:
    """The lag families, from rows sorted by group, topic, partition.

    ``extra``: labels every sample carries; ``partition_extra``: the label text
    (``k="v",...``) the per-partition samples carry on top, from their row."""
    rows = list(rows)
    labels = [group_partition_labels(r.group, r.topic, r.partition) for r in rows]
    if partition_extra is not None:
        labels = [f"{text},{partition_extra(r)}" for text, r in zip(labels, rows, strict=True)]
    more = extra or {}
    out.family(
        "kafka_consumergroup_group_offset", "gauge", "Last committed offset of the partition."
    )
    out.series("kafka_consumergroup_group_offset", labels, [r.committed for r in rows])
    out.family(
        "kafka_consumergroup_group_lag",
        "gauge",
        "Records not yet consumed: end offset minus committed offset.",
    )
    out.series("kafka_consumergroup_group_lag", labels, [r.lag for r in rows])
    out.family(
        "kafka_consumergroup_group_lag_seconds",
        "gauge",
        "Age of the first record not yet consumed, in seconds.",
    )
    out.series("kafka_consumergroup_group_lag_seconds", labels, [r.lag_seconds for r in rows])

    by_group: dict[str, list[PartitionLag]] = {}
    by_topic: dict[tuple[str, str], int] = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
        by_topic[r.group, r.topic] = by_topic.get((r.group, r.topic), 0) + r.lag
    out.family("kafka_consumergroup_group_max_lag", "gauge", "Largest partition lag of the group.")
    for group, group_rows in by_group.items():
        out.sample(
            "kafka_consumergroup_group_max_lag", max(r.lag for r in group_rows), group=group, **more
        )
    out.family(
        "kafka_consumergroup_group_max_lag_seconds",
        "gauge",
        "Largest partition lag of the group, in seconds.",
    )
    for group, group_rows in by_group.items():
        known = [r.lag_seconds for r in group_rows if not math.isnan(r.lag_seconds)]
        value = max(known) if known else UNKNOWN
        out.sample("kafka_consumergroup_group_max_lag_seconds", value, group=group, **more)
    out.family("kafka_consumergroup_group_sum_lag", "gauge", "Sum of the group's partition lags.")
    for group, group_rows in by_group.items():
        out.sample(
            "kafka_consumergroup_group_sum_lag", sum(r.lag for r in group_rows), group=group, **more
        )
    out.family(
        "kafka_consumergroup_group_topic_sum_lag",
        "gauge",
        "Sum of the group's partition lags on one topic.",
    )
    for (group, topic), total in by_topic.items():
        out.sample(
            "kafka_consumergroup_group_topic_sum_lag", total, group=group, topic=topic, **more
        )
