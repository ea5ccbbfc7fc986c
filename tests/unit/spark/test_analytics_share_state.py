"""`kgroups analytics` reads ``__share_group_state`` (ShareSnapshot and
ShareUpdate records, in Kafka's layout) and the share group records of
``__consumer_offsets``: each share partition's start offset and delivery state
record by record, and each share group's members over time."""

from __future__ import annotations

import uuid
from types import MappingProxyType
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kgroups.coordinator.record_codec import Writer
from kgroups.coordinator.share import records as share
from kgroups.share_partitions.state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    StateBatch,
    encode_key,
    encode_snapshot,
)
from kgroups.share_partitions.states import RecordState
from kgroups.spark.analytics.consumer_epochs import group_timeline
from kgroups.spark.analytics.offsets_log import decode_record
from kgroups.spark.analytics.share_deliveries import Span, overlay, partition_history
from kgroups.spark.analytics.share_report import (
    ShareGroupReport,
    SharePartitionNow,
    render_share_groups,
)
from kgroups.spark.analytics.share_state_log import decode_state_record

JOBS = uuid.UUID(int=9)
NAMES = {str(JOBS): "jobs"}
T0 = 1_700_000_000_000
AVAILABLE, ACKED, ARCHIVED = (
    int(RecordState.AVAILABLE),
    int(RecordState.ACKNOWLEDGED),
    int(RecordState.ARCHIVED),
)


def _update_value(
    snapshot_epoch: int,
    start_offset: int,
    batches: list[tuple[int, int, int, int]],
    delivery_complete: int | None = None,
) -> bytes:
    """A ShareUpdateValue v0 as Kafka writes it: flexible, with Kafka 4.2's
    DeliveryCompleteCount as tagged field 0 when given."""
    writer = Writer(0, flexible=True)
    writer.int32(snapshot_epoch)
    writer.int32(0)  # leader epoch
    writer.raw(start_offset.to_bytes(8, "big", signed=True))
    writer.array_length(len(batches))
    for first, last, state, count in batches:
        writer.raw(first.to_bytes(8, "big") + last.to_bytes(8, "big"))
        writer.int8(state)
        writer.raw(count.to_bytes(2, "big"))
        writer.uvarint(0)
    if delivery_complete is None:
        writer.uvarint(0)
    else:
        writer.uvarint(1)  # one tagged field: tag 0, 4 bytes
        writer.uvarint(0)
        writer.uvarint(4)
        writer.int32(delivery_complete)
    return writer.getvalue()


def _snapshot(epoch: int, start: int, *batches: tuple[int, int, int, int]) -> bytes:
    return encode_snapshot(
        ShareSnapshotValue(
            epoch, 0, 0, start, T0, T0 + epoch, tuple(StateBatch(*b) for b in batches)
        )
    )


def _key(record_type: int, group: str = "workers", partition: int = 0) -> bytes:
    return encode_key(ShareStateKey(record_type, group, JOBS, partition))


def _state_rows(*records: tuple[int, bytes | None]) -> list[dict[str, Any]]:
    rows = []
    for offset, (record_type, value) in enumerate(records):
        row = decode_state_record(_key(record_type), value, NAMES)
        row.update(state_partition=3, state_offset=offset, record_ms=T0 + 1000 * offset)
        rows.append(row)
    return rows


def test_snapshots_and_updates_are_decoded_in_kafkas_layout() -> None:
    snapshot, update = _state_rows(
        (SHARE_SNAPSHOT, _snapshot(2, 10, (12, 14, AVAILABLE, 1))),
        (SHARE_UPDATE, _update_value(2, -1, [(15, 15, ARCHIVED, 5)], delivery_complete=1)),
    )
    assert snapshot["kind"] == "share_snapshot" and snapshot["topic"] == "jobs"
    assert (snapshot["snapshot_epoch"], snapshot["start_offset"], snapshot["write_ms"]) == (
        2,
        10,
        T0 + 2,
    )
    assert snapshot["batches"] == [
        {"first_offset": 12, "last_offset": 14, "delivery_state": AVAILABLE, "delivery_count": 1}
    ]
    assert update["kind"] == "share_update" and update["start_offset"] == -1
    assert update["batches"][0]["delivery_count"] == 5
    (gone,) = _state_rows((SHARE_SNAPSHOT, None))
    assert gone["kind"] == "share_state_deleted" and gone["partition"] == 0
    bad = decode_state_record(b"\x00\x07x", b"", NAMES)
    assert bad["kind"] == "unknown" and "key" in bad["error"]


def test_an_update_overlays_the_snapshots_batches() -> None:
    spans = [Span(10, 19, AVAILABLE, 1), Span(20, 29, ACKED, 1)]
    assert overlay(spans, [Span(15, 24, ARCHIVED, 2)]) == [
        Span(10, 14, AVAILABLE, 1),
        Span(15, 24, ARCHIVED, 2),
        Span(25, 29, ACKED, 1),
    ]


def test_a_share_partitions_history_record_by_record() -> None:
    history = partition_history(
        _state_rows(
            (SHARE_SNAPSHOT, _snapshot(0, 0)),  # the start, set at the first fetch
            # 0..4 done; 5..9 released (to deliver again); 10..11 acknowledged.
            (SHARE_SNAPSHOT, _snapshot(1, 5, (5, 9, AVAILABLE, 1), (10, 11, ACKED, 1))),
            # 5..6 archived after their 5th delivery; 7..9 delivered a second time.
            (
                SHARE_UPDATE,
                _update_value(1, -1, [(5, 6, ARCHIVED, 5), (7, 9, AVAILABLE, 2)]),
            ),
            (SHARE_UPDATE, _update_value(1, 12, [])),  # all done with
            (SHARE_SNAPSHOT, None),
        )
    )
    columns = (
        "event",
        "start_offset",
        "in_flight_end",
        "delivered_not_done",
        "acknowledged",
        "archived",
        "redelivered",
        "completed",
        "completed_total",
        "redelivered_seen",
        "archived_seen",
    )
    assert [tuple(row.get(c) for c in columns) for row in history] == [
        ("snapshot", 0, 0, 0, 0, 0, 0, None, 0, 0, 0),
        ("snapshot", 5, 12, 5, 2, 0, 0, 5, 5, 0, 0),
        ("update", 5, 12, 3, 2, 2, 5, 0, 5, 5, 2),
        ("update", 12, 12, 0, 0, 0, 0, 7, 12, 5, 2),
        ("deleted", None, None, None, None, None, None, None, None, None, None),
    ]
    assert history[2]["max_delivery_count"] == 5 and history[1]["delivered_seen"] == 7


def _share_decoded(key: share.ShareGroupKey, value: Any, offset: int) -> dict[str, Any]:
    row = decode_record(*share.encode_record(key, value), NAMES)
    row.update(offsets_offset=offset, record_ms=T0 + 1000 * offset)
    row.setdefault("subscribed_regex", None)
    row.setdefault("subscribed_topics", None)
    row.setdefault("instance_id", None)
    return row


def test_share_group_records_give_its_members_over_time() -> None:
    g = "workers"
    both = MappingProxyType({JOBS: frozenset({0, 1})})
    member = share.MemberMetadataValue(None, "app", "/10.0.0.1", ("jobs",))
    records = [
        (share.ShareGroupKey(share.MEMBER_METADATA, g, "m1"), member),
        (share.ShareGroupKey(share.GROUP_METADATA, g), share.GroupMetadataValue(1, 7)),
        (
            share.ShareGroupKey(share.TARGET_ASSIGNMENT_MEMBER, g, "m1"),
            share.TargetAssignmentMemberValue(both),
        ),
        (
            share.ShareGroupKey(share.TARGET_ASSIGNMENT_METADATA, g),
            share.TargetAssignmentMetadataValue(1),
        ),
        (
            share.ShareGroupKey(share.CURRENT_MEMBER_ASSIGNMENT, g, "m1"),
            share.CurrentMemberAssignmentValue(1, 0, 0, both),
        ),
        (share.ShareGroupKey(share.MEMBER_METADATA, g, "m2"), member),
        (share.ShareGroupKey(share.GROUP_METADATA, g), share.GroupMetadataValue(2, 7)),
        (share.ShareGroupKey(share.MEMBER_METADATA, g, "m2"), None),
        (share.ShareGroupKey(share.GROUP_METADATA, g), share.GroupMetadataValue(3, 7)),
    ]
    rows = [_share_decoded(k, v, i) for i, (k, v) in enumerate(records)]
    assert [r["kind"] for r in rows[:5]] == [
        "share_member",
        "share_group_epoch",
        "share_target_assignment",
        "share_assignment_epoch",
        "share_member_assignment",
    ]
    assert rows[0]["client_id"] == "app" and rows[0]["subscribed_topics"] == ["jobs"]
    assert rows[4]["assigned"] == [
        {"topic": "jobs", "partition": 0},
        {"topic": "jobs", "partition": 1},
    ]
    assert rows[7]["kind"] == "share_member_deleted"
    timeline = group_timeline(rows, "share")
    bumps = [
        (e["epoch"], e["member_count"], e["cause"]) for e in timeline if e["event"] == "group_epoch"
    ]
    assert bumps == [
        (1, 1, "group created; joined: m1"),
        (2, 2, "joined: m2"),
        (3, 1, "left: m2"),
    ]
    # The member owns its target at once: epoch 1 reconciled by its assignment record.
    first = next(e for e in timeline if e["event"] == "group_epoch")
    assert first["reconciled_ms"] == 3000


def test_the_report_has_a_section_per_share_group() -> None:
    report = ShareGroupReport("workers")
    report.starts[("jobs", 0)] = [(T0, 0), (T0 + 5000, 5), (T0 + 9000, 12)]
    report.partitions.append(SharePartitionNow("jobs", 0, 12, 0, 0, 0, 0, 12, 5, 2, log_end=20))
    page = render_share_groups([report])
    assert "<h2>workers (share group)</h2>" in page
    assert page.count('class="share-partition"') == 1 and "<td>8</td>" in page  # lag 20 - 12
    assert render_share_groups([]) == ""
