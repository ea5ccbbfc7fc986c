"""`kgroups analytics` reads the consumer group (KIP-848) records of
``__consumer_offsets`` through the broker's codec, and turns one group's records
into its epoch timeline: group epoch bumps with their cause, target assignments,
members' reconciliation steps, and how long each epoch took to reconcile."""

from __future__ import annotations

import uuid
from types import MappingProxyType
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from kgroups.coordinator.consumer import records as r
from kgroups.coordinator.consumer.member import MemberState
from kgroups.spark.analytics.consumer_epochs import group_timeline
from kgroups.spark.analytics.offsets_log import decode_record
from kgroups.spark.analytics.report import EpochMark, GroupReport, render_report

ORDERS = uuid.UUID(int=7)
GONE = uuid.UUID(int=8)
NAMES = {str(ORDERS): "orders"}
T0 = 1_700_000_000_000


def _parts(*partitions: int) -> Any:
    return MappingProxyType({ORDERS: frozenset(partitions)}) if partitions else r.EMPTY_ASSIGNMENT


def _member(name: str, topics: tuple[str, ...] = ("orders",)) -> r.MemberMetadataValue:
    return r.MemberMetadataValue(
        instance_id=None,
        rack_id=None,
        client_id=name,
        client_host="/10.0.0.1",
        subscribed_topic_names=topics,
        subscribed_topic_regex=None,
        rebalance_timeout_ms=30_000,
        server_assignor="uniform",
    )


def _current(epoch: int, previous: int, state: MemberState, owned: Any, pending: Any) -> Any:
    return r.CurrentMemberAssignmentValue(epoch, previous, int(state), owned, pending)


def _decoded(key: r.ConsumerGroupKey, value: r.ConsumerGroupValue | None) -> dict[str, Any]:
    k, v = r.encode_record(key, value)
    return decode_record(k, v, NAMES)


def test_each_consumer_group_record_type_is_decoded() -> None:
    g = "billing"
    assert _decoded(r.GroupKey(r.GROUP_METADATA, g), r.GroupMetadataValue(4)) == {
        "key_version": 3,
        "value_version": 0,
        "group": g,
        "kind": "consumer_group_epoch",
        "group_epoch": 4,
    }
    member = _decoded(r.MemberKey(r.MEMBER_METADATA, g, "m1"), _member("app"))
    assert member["kind"] == "consumer_member" and member["member_id"] == "m1"
    assert (member["client_id"], member["subscribed_topics"], member["server_assignor"]) == (
        "app",
        ["orders"],
        "uniform",
    )
    target = _decoded(
        r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "m1"),
        r.TargetAssignmentMemberValue(
            MappingProxyType({ORDERS: frozenset({1, 0}), GONE: frozenset({0})})
        ),
    )
    # A topic deleted since is named by its id.
    assert target["target"] == [
        {"topic": str(GONE), "partition": 0},
        {"topic": "orders", "partition": 0},
        {"topic": "orders", "partition": 1},
    ]
    current = _decoded(
        r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "m1"),
        _current(5, 4, MemberState.UNREVOKED_PARTITIONS, _parts(0), _parts(2)),
    )
    assert (current["member_epoch"], current["previous_member_epoch"]) == (5, 4)
    assert current["member_state"] == "unrevoked_partitions"
    assert current["assigned"] == [{"topic": "orders", "partition": 0}]
    assert current["pending_revocation"] == [{"topic": "orders", "partition": 2}]
    assert _decoded(
        r.GroupKey(r.TARGET_ASSIGNMENT_METADATA, g), r.TargetAssignmentMetadataValue(5)
    )["assignment_epoch"] == (5)
    topics = r.PartitionMetadataValue((r.TopicMetadataEntry(ORDERS, "orders", 3),))
    assert _decoded(r.GroupKey(r.PARTITION_METADATA, g), topics)["topics"] == ["orders"]
    regex = _decoded(
        r.RegularExpressionKey(g, "ord.*"), r.RegularExpressionValue(("orders",), 1, T0)
    )
    assert (regex["kind"], regex["regex"], regex["topics"]) == (
        "consumer_regex",
        "ord.*",
        ["orders"],
    )
    # Tombstones keep their key.
    assert _decoded(r.MemberKey(r.MEMBER_METADATA, g, "m1"), None) == {
        "key_version": 5,
        "value_version": None,
        "group": g,
        "member_id": "m1",
        "kind": "consumer_member_deleted",
    }
    assert _decoded(r.GroupKey(r.GROUP_METADATA, g), None)["kind"] == "consumer_group_epoch_deleted"


def test_a_malformed_consumer_group_record_is_kept_as_unknown() -> None:
    key = r.encode_key(r.GroupKey(r.GROUP_METADATA, "g"))
    row = decode_record(key, b"\x00\x00\x00")
    assert row["kind"] == "unknown" and row["error"]
    assert decode_record(b"\x00\x09unknown", b"\x00\x00")["kind"] == "unknown"


def _history() -> list[dict[str, Any]]:
    """One group's records as the coordinator writes them, a second apart per step:
    a joins; b joins and a hands over partition 1; b leaves; the group is deleted."""
    g = "billing"
    S, U, R = (
        MemberState.STABLE,
        MemberState.UNREVOKED_PARTITIONS,
        MemberState.UNRELEASED_PARTITIONS,
    )
    steps: list[list[tuple[r.ConsumerGroupKey, r.ConsumerGroupValue | None]]] = [
        [
            (r.MemberKey(r.MEMBER_METADATA, g, "a"), _member("a")),
            (r.GroupKey(r.GROUP_METADATA, g), r.GroupMetadataValue(1)),
            (
                r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "a"),
                r.TargetAssignmentMemberValue(_parts(0, 1)),
            ),
            (r.GroupKey(r.TARGET_ASSIGNMENT_METADATA, g), r.TargetAssignmentMetadataValue(1)),
            (
                r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "a"),
                _current(1, 0, S, _parts(0, 1), _parts()),
            ),
        ],
        [
            (r.MemberKey(r.MEMBER_METADATA, g, "b"), _member("b")),
            (r.GroupKey(r.GROUP_METADATA, g), r.GroupMetadataValue(2)),
            (
                r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "a"),
                r.TargetAssignmentMemberValue(_parts(0)),
            ),
            (
                r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "b"),
                r.TargetAssignmentMemberValue(_parts(1)),
            ),
            (r.GroupKey(r.TARGET_ASSIGNMENT_METADATA, g), r.TargetAssignmentMetadataValue(2)),
            (
                r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "a"),
                _current(1, 0, U, _parts(0), _parts(1)),
            ),
            (
                r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "b"),
                _current(2, 0, R, _parts(), _parts()),
            ),
        ],
        [
            (
                r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "a"),
                _current(2, 1, S, _parts(0), _parts()),
            )
        ],
        [
            (
                r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "b"),
                _current(2, 0, S, _parts(1), _parts()),
            )
        ],
        [
            (r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "b"), None),
            (r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "b"), None),
            (r.MemberKey(r.MEMBER_METADATA, g, "b"), None),
            (r.GroupKey(r.GROUP_METADATA, g), r.GroupMetadataValue(3)),
            (
                r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "a"),
                r.TargetAssignmentMemberValue(_parts(0, 1)),
            ),
            (r.GroupKey(r.TARGET_ASSIGNMENT_METADATA, g), r.TargetAssignmentMetadataValue(3)),
        ],
        [
            (r.MemberKey(r.MEMBER_METADATA, g, "a"), _member("a", ("orders", "refunds"))),
            (r.GroupKey(r.GROUP_METADATA, g), r.GroupMetadataValue(4)),
        ],
        [
            (r.MemberKey(r.CURRENT_MEMBER_ASSIGNMENT, g, "a"), None),
            (r.MemberKey(r.TARGET_ASSIGNMENT_MEMBER, g, "a"), None),
            (r.MemberKey(r.MEMBER_METADATA, g, "a"), None),
            (r.GroupKey(r.TARGET_ASSIGNMENT_METADATA, g), None),
            (r.GroupKey(r.GROUP_METADATA, g), None),
        ],
    ]
    rows = []
    for second, step in enumerate(steps):
        for key, value in step:
            row = _decoded(key, value)
            row.update(record_ms=T0 + second * 1000, offsets_offset=len(rows))
            rows.append(row)
    return rows


def test_the_timeline_shows_epoch_bumps_targets_and_reconciliation_steps() -> None:
    timeline = group_timeline(_history())
    assert [(e["event"], e.get("epoch"), e["record_ms"] - T0, e["cause"]) for e in timeline] == [
        ("group_epoch", 1, 0, "group created; joined: a"),
        ("assignment_epoch", 1, 0, "new target for a"),
        ("member_epoch", 1, 0, "a: epoch 1 (stable)"),
        ("group_epoch", 2, 1000, "joined: b"),
        ("assignment_epoch", 2, 1000, "new target for a, b"),
        ("member_epoch", 1, 1000, "a: epoch 1 (unrevoked_partitions); revoking: orders-1"),
        ("member_epoch", 2, 1000, "b: epoch 2 (unreleased_partitions); waiting for: orders-1"),
        ("member_epoch", 2, 2000, "a: epoch 1 -> 2 (stable)"),
        ("member_epoch", 2, 3000, "b: epoch 2 (stable)"),
        ("group_epoch", 3, 4000, "left: b"),
        ("assignment_epoch", 3, 4000, "new target for a"),
        ("group_epoch", 4, 5000, "subscription changed: a"),
        ("group_deleted", None, 6000, "group deleted"),
    ]
    revoking = timeline[5]
    assert (revoking["member_id"], revoking["assigned"], revoking["pending_revocation"]) == (
        "a",
        ["orders-0"],
        ["orders-1"],
    )
    assert timeline[6]["receiving"] == ["orders-1"]
    # Epoch 1 reconciled at once, epoch 2 when b got partition 1 (3 s after 1 s);
    # a never reported epoch 3 in this log.
    group_epochs = [e for e in timeline if e["event"] == "group_epoch"]
    assert [e["reconciled_ms"] for e in group_epochs] == [0, 2000, None, None]
    assert [e["member_count"] for e in group_epochs] == [1, 2, 1, 1]


def test_the_report_draws_epochs_on_the_lag_chart() -> None:
    report = GroupReport("billing", "OK", 0)
    report.lag_series = [(T0 + 1000 * j, 0, "OK") for j in range(7)]
    report.epochs = [
        EpochMark(
            e["record_ms"],
            e["event"],
            e.get("epoch"),
            e["cause"],
            e["member_count"],
            e.get("reconciled_ms"),
        )
        for e in group_timeline(_history())
    ]
    page = render_report([report], T0 + 6000, "t")
    # Four group epochs, three target assignments and the deletion are lines; only
    # the group epochs are labelled.
    assert page.count('<g class="epoch">') == 4 + 3 + 1
    assert [f">e{n}</text>" in page for n in range(1, 6)] == [True] * 4 + [False]
    assert page.count('class="epoch-label"') == 4
    assert page.count('class="reconciliation"') == 5
    assert "<h3>Epochs (13)</h3>" in page and "Rebalances (" not in page
    assert "revoking: orders-1" in page and "<td>2.0 s</td>" in page
    # The summary counts the group epochs as rebalances.
    assert "<td>0</td><td></td><td>4</td>" in page


def test_groups_split_across_arrow_batches_keep_one_timeline_each() -> None:
    import pyarrow as pa

    from kgroups.spark.analytics.consumer_epochs import _timelines
    from kgroups.spark.analytics.offsets_log import DECODED_SCHEMA
    from kgroups.spark.analytics.row_types import arrow_of

    rows = _history()
    other = [{**row, "group": "zeta"} for row in rows[:5]]
    schema = arrow_of(DECODED_SCHEMA)
    batches = [
        pa.RecordBatch.from_pylist(part, schema=schema)
        for part in (rows[:3], rows[3:], other[:2], other[2:])
    ]
    out = [row for batch in _timelines(iter(batches)) for row in batch.to_pylist()]
    billing = [(e["event"], e["epoch"]) for e in out if e["group"] == "billing"]
    assert billing == [(e["event"], e.get("epoch")) for e in group_timeline(rows)]
    assert [e["event"] for e in out if e["group"] == "zeta"] == [
        "group_epoch",
        "assignment_epoch",
        "member_epoch",
    ]
