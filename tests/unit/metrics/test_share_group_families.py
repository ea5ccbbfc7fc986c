"""The share-group families as a scrape shows them: every delivery count up
to the limit has its sample, and one counted under a higher limit (before
the broker's setting was lowered) is shown too."""

from __future__ import annotations

from kgroups.metrics.exposition import Exposition
from kgroups.metrics.share_group_metrics import (
    ShareGroupRow,
    SharePartitionRow,
    write_share_groups,
)

from prometheus_text import Scrape

BY_DELIVERY = "kafka_sharegroup_partition_acquired_records_by_delivery_count"


def _row(acquired_by_delivery: dict[int, int], lag: int | None = 7) -> SharePartitionRow:
    archived = {"delivery_count_limit": 1, "rejected": 2, "gap": 0}
    acquired = sum(acquired_by_delivery.values())
    return SharePartitionRow(
        "jobs", "orders", 0, 10, 20, lag, 2, acquired, acquired_by_delivery, 5, 3, archived
    )


def _scrape(*rows: SharePartitionRow) -> Scrape:
    out = Exposition()
    write_share_groups(out, [ShareGroupRow("jobs", "Stable", 2, 4)], list(rows), {1: 9, 0: 2})
    return Scrape(out.text())


def test_every_delivery_count_up_to_the_limit_has_a_sample() -> None:
    m = _scrape(_row({1: 3, 4: 1}))
    labels = {"group": "jobs", "topic": "orders", "partition": 0}
    counts = [m.value(BY_DELIVERY, delivery_count=n, **labels) for n in range(1, 6)]
    assert counts == [3, 0, 0, 1, 0]
    assert m.value("kafka_sharegroup_partition_acquired_records", **labels) == 4
    assert m.value("kafka_server_sharepartitionmetrics_inflightmessagecount", **labels) == 10
    assert m.value("kafka_sharegroup_partition_lag", **labels) == 7
    archived = "kafka_sharegroup_partition_archived_records_total"
    assert m.value(archived, reason="rejected", **labels) == 2
    assert m.value("kafka_sharegroup_epoch", group="jobs") == 4
    assert m.value("kafka_server_group_coordinator_metrics_share_group_count", state="Empty") == 0
    acks = "kafka_server_sharegroupmetrics_recordacknowledgements_total"
    assert m.value(acks, ack_type="Accept") == 9
    assert m.value(acks, ack_type="Renew") == 0
    assert not [key for key in m.samples if key[0] == acks and ("ack_type", "Gap") in key[1]]


def test_a_count_past_the_limit_is_shown_and_an_unknown_lag_is_not() -> None:
    m = _scrape(_row({7: 2}, lag=None))
    labels = {"group": "jobs", "topic": "orders", "partition": 0}
    assert m.value(BY_DELIVERY, delivery_count=7, **labels) == 2
    assert m.value(BY_DELIVERY, delivery_count=5, **labels) == 0
    assert m.get("kafka_sharegroup_partition_lag", -1, **labels) == -1
