"""The epoch history of each consumer group (KIP-848), from its records.

A consumer group has no rebalance barrier: its coordinator bumps the group
epoch when members join, leave or change their subscription (or the subscribed
topics change), computes a target assignment for that epoch (the assignment
epoch), and each member then reconciles on its own: it revokes the partitions
it must give up, and its member epoch moves to the target's once it has. The
coordinator logs each step, so the history is read straight from the records:

- ``group_epoch``: the group epoch moved, with the members that joined, left
  or changed their subscription since the previous epoch; ``reconciled_ms``
  is how long until every member was at that epoch owning exactly its target
  (null while the log shows it never got there);
- ``assignment_epoch``: a target assignment was computed, with the members
  whose target changed;
- ``member_epoch``: a member's assignment moved (one reconciliation step), with
  the partitions it still has to revoke and those it still waits for;
- ``regex_resolved``: a subscribed regular expression was resolved to topics;
- ``group_deleted``: the group's tombstone.

A share group (KIP-932) logs the same steps under its own record types
(kinds ``share_*``, no regular expressions), so its history, the
``share_epochs`` table, comes from the same function; a share member owns
its target at once (nothing to revoke: a share partition has many owners).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgroups.spark.analytics.arrow_map import ArrowFunction, map_sorted
from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = [
    "CONSUMER_KINDS",
    "EPOCHS_SCHEMA",
    "SHARE_KINDS",
    "consumer_epochs",
    "group_timeline",
    "share_epochs",
]

CONSUMER_KINDS = (
    "consumer_group_epoch",
    "consumer_group_epoch_deleted",
    "consumer_member",
    "consumer_member_deleted",
    "consumer_assignment_epoch",
    "consumer_target_assignment",
    "consumer_target_assignment_deleted",
    "consumer_member_assignment",
    "consumer_member_assignment_deleted",
    "consumer_regex",
)
SHARE_KINDS = tuple(
    kind.replace("consumer_", "share_", 1) for kind in CONSUMER_KINDS if kind != "consumer_regex"
)

EPOCHS_SCHEMA = struct(
    ("group", "string"),
    ("record_ms", "long"),
    ("offsets_offset", "long"),
    ("event", "string"),
    ("epoch", "int"),
    ("previous_epoch", "int"),
    ("member_id", "string"),
    ("member_state", "string"),
    ("member_count", "int"),
    ("assigned", "strings"),
    ("pending_revocation", "strings"),
    ("receiving", "strings"),
    ("cause", "string"),
    ("reconciled_ms", "long"),
)


def _partitions(tps: Iterable[dict[str, Any]] | None) -> list[str]:
    return [f"{tp['topic']}-{tp['partition']}" for tp in tps or ()]


@dataclass
class _Member:
    label: str
    subscription: tuple[tuple[str, ...], str | None]
    epoch: int | None = None
    state: str | None = None
    assigned: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)


@dataclass
class _Group:
    """What the records so far say about one group."""

    name: str
    epoch: int | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    resubscribed: list[str] = field(default_factory=list)
    new_targets: list[str] = field(default_factory=list)
    unreconciled: dict[str, Any] | None = None
    """The last group_epoch row, until every member has reached its epoch."""

    def row(self, record: dict[str, Any], event: str, **values: Any) -> dict[str, Any]:
        return {
            "group": self.name,
            "record_ms": record["record_ms"],
            "offsets_offset": record["offsets_offset"],
            "event": event,
            "member_count": len(self.members),
            **values,
        }

    def check_reconciled(self, record: dict[str, Any]) -> None:
        row = self.unreconciled
        if row is None:
            return
        if all(m.epoch == row["epoch"] and m.state == "stable" for m in self.members.values()):
            row["reconciled_ms"] = record["record_ms"] - row["record_ms"]
            self.unreconciled = None


def _label(record: dict[str, Any]) -> str:
    instance = record.get("instance_id")
    return f"{record['member_id']} ({instance})" if instance else str(record["member_id"])


def _group_epoch_cause(group: _Group, created: bool) -> str:
    parts = ["group created"] if created else []
    for label, names in (
        ("joined", group.joined),
        ("left", group.left),
        ("subscription changed", group.resubscribed),
    ):
        if names:
            parts.append(f"{label}: {', '.join(names)}")
    return "; ".join(parts) or "subscribed topics changed"


def _member_cause(member: _Member, previous: int | None, receiving: list[str]) -> str:
    moved = (
        f"epoch {member.epoch}"
        if previous is None or previous == member.epoch
        else f"epoch {previous} -> {member.epoch}"
    )
    parts = [f"{member.label}: {moved} ({member.state})"]
    if member.pending:
        parts.append(f"revoking: {', '.join(member.pending)}")
    if receiving:
        parts.append(f"waiting for: {', '.join(receiving)}")
    return "; ".join(parts)


def group_timeline(
    records: Iterable[dict[str, Any]], group_type: str = "consumer"
) -> list[dict[str, Any]]:
    """The EPOCHS_SCHEMA rows of one group's records (DECODED_SCHEMA rows, in
    log order); ``group_type``: ``consumer`` or ``share``, whose kinds they are."""
    out: list[dict[str, Any]] = []
    group: _Group | None = None
    prefix = f"{group_type}_"
    for r in records:
        if group is None:
            group = _Group(r["group"])
        kind = "consumer_" + r["kind"].removeprefix(prefix)
        member_id = str(r.get("member_id") or "")
        if kind == "consumer_member":
            subscription = (tuple(r["subscribed_topics"] or ()), r["subscribed_regex"])
            known = group.members.get(member_id)
            if known is None:
                group.members[member_id] = _Member(_label(r), subscription)
                group.joined.append(_label(r))
            elif known.subscription != subscription:
                known.subscription = subscription
                group.resubscribed.append(known.label)
        elif kind == "consumer_member_deleted":
            gone = group.members.pop(member_id, None)
            if gone is not None:
                group.left.append(gone.label)
        elif kind == "consumer_group_epoch":
            epoch = r["group_epoch"]
            if epoch != group.epoch:
                row = group.row(
                    r,
                    "group_epoch",
                    epoch=epoch,
                    previous_epoch=group.epoch,
                    cause=_group_epoch_cause(group, created=group.epoch is None),
                    reconciled_ms=None,
                )
                out.append(row)
                group.epoch = epoch
                group.joined, group.left, group.resubscribed = [], [], []
                group.unreconciled = row
                group.check_reconciled(r)
        elif kind == "consumer_group_epoch_deleted":
            out.append(
                group.row(r, "group_deleted", previous_epoch=group.epoch, cause="group deleted")
            )
            group = _Group(group.name)
        elif kind == "consumer_target_assignment":
            member = group.members.get(member_id)
            target = _partitions(r["target"])
            if member is not None and member.target != target:
                member.target = target
                group.new_targets.append(member.label)
        elif kind == "consumer_assignment_epoch":
            changed = group.new_targets
            cause = (
                f"new target for {', '.join(changed)}" if changed else "target assignment unchanged"
            )
            out.append(group.row(r, "assignment_epoch", epoch=r["assignment_epoch"], cause=cause))
            group.new_targets = []
        elif kind == "consumer_member_assignment":
            member = group.members.get(member_id)
            if member is None:  # its metadata record was compacted away
                member = group.members[member_id] = _Member(member_id, ((), None))
            previous = member.epoch
            member.epoch, member.state = r["member_epoch"], r["member_state"]
            member.assigned = _partitions(r["assigned"])
            member.pending = _partitions(r["pending_revocation"])
            receiving = [tp for tp in member.target if tp not in member.assigned]
            out.append(
                group.row(
                    r,
                    "member_epoch",
                    epoch=member.epoch,
                    previous_epoch=previous,
                    member_id=member.label,
                    member_state=member.state,
                    assigned=member.assigned,
                    pending_revocation=member.pending,
                    receiving=receiving,
                    cause=_member_cause(member, previous, receiving),
                )
            )
            group.check_reconciled(r)
        elif kind == "consumer_regex":
            topics = ", ".join(r["topics"] or ()) or "no topic"
            out.append(group.row(r, "regex_resolved", cause=f"/{r['regex']}/ resolved: {topics}"))
    return out


def _timelines(
    batches: Iterator[pa.RecordBatch], group_type: str = "consumer"
) -> Iterator[pa.RecordBatch]:
    """mapInArrow over a group type's records sorted by (group, offsets_offset)."""
    import pyarrow as pa

    arrow = arrow_of(EPOCHS_SCHEMA)
    current: list[dict[str, Any]] = []
    for batch in batches:
        out: list[dict[str, Any]] = []
        for row in batch.to_pylist():
            if current and row["group"] != current[0]["group"]:
                out.extend(group_timeline(current, group_type))
                current = []
            current.append(row)
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=arrow)
    if current:
        yield pa.RecordBatch.from_pylist(group_timeline(current, group_type), schema=arrow)


def _share_timelines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return _timelines(batches, "share")


def _epochs(
    decoded: DataFrame, kinds: tuple[str, ...], function: ArrowFunction, on_driver: bool
) -> DataFrame:
    from pyspark.sql import functions as F

    records = decoded.filter(F.col("kind").isin(*kinds))
    timelines = map_sorted(
        records,
        function,
        EPOCHS_SCHEMA,
        keys=["group"],
        then=["offsets_offset"],
        on_driver=on_driver,
    )
    return timelines.withColumn("time", F.timestamp_millis("record_ms"))


def consumer_epochs(decoded: DataFrame, *, on_driver: bool = False) -> DataFrame:
    """The ``epochs`` table: one row per epoch move of each consumer group
    (``on_driver``: follow the records on the driver, see arrow_map)."""
    return _epochs(decoded, CONSUMER_KINDS, _timelines, on_driver)


def share_epochs(decoded: DataFrame, *, on_driver: bool = False) -> DataFrame:
    """The ``share_epochs`` table: the same for each share group."""
    return _epochs(decoded, SHARE_KINDS, _share_timelines, on_driver)
