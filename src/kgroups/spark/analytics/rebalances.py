"""The rebalance history of each group, with causes inferred from its member sets.

Each group metadata record the coordinator stores ends a rebalance (or, with the
same generation, replaces a static member's id). Comparing a record's members
with the previous record's tells who joined, who went away, and which static
member came back under a new member id.

Whether a departed member left (LeaveGroup) or was expired by its session
timeout is not logged, and neither are heartbeats, so the log can only prove a
leave: when the rebalance began (``current_state_timestamp``) less than the
member's session timeout after its last sign of life -- the later of the
previous generation and the group's last commit to a partition assigned to
it -- its session cannot have run out, so it left. Otherwise it either expired
or heartbeated on and then left, and is listed as "left or expired". How long
the group was not Stable is measured from the earliest moment the rebalance
can have begun (the departure: the last sign of life, or the session's end
after it) or from when the join phase ended to the record that completed it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from kgroups.spark.analytics.arrow_map import map_sorted
from kgroups.spark.analytics.row_types import arrow_of, struct

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

__all__ = ["rebalance_history"]

_DEPARTED = struct(
    ("member_id", "string"),
    ("session_timeout_ms", "int"),
    ("assignment", ArrayType(struct(("topic", "string"), ("partition", "int")))),
)
_CHANGES_SCHEMA = struct(
    ("group", "string"),
    ("generation", "int"),
    ("record_ms", "long"),
    ("state_ms", "long"),
    ("prev_ms", "long"),
    ("protocol_type", "string"),
    ("protocol", "string"),
    ("leader", "string"),
    ("member_count", "int"),
    ("members", "strings"),
    ("joined", "strings"),
    ("replaced", "strings"),
    ("subscription_changed", "boolean"),
    ("emptied", "boolean"),
    ("deleted", "boolean"),
    ("departed", ArrayType(_DEPARTED)),
)


def _label(member: dict[str, Any]) -> str:
    instance = member.get("group_instance_id")
    return f"{member['member_id']} ({instance})" if instance else str(member["member_id"])


def _changes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over generations sorted by (group, offsets_offset)."""
    import pyarrow as pa

    arrow = arrow_of(_CHANGES_SCHEMA)
    group: str | None = None
    previous: dict[str, Any] | None = None
    for batch in batches:
        out = []
        for row in batch.to_pylist():
            if row["group"] != group:
                group, previous = row["group"], None
            members = {m["member_id"]: m for m in row["members"] or []}
            before = {m["member_id"]: m for m in (previous or {}).get("members") or []}
            by_instance = {
                m["group_instance_id"]: m for m in before.values() if m["group_instance_id"]
            }
            joined, replaced = [], []
            for member_id, m in members.items():
                if member_id in before:
                    continue
                old = by_instance.get(m["group_instance_id"]) if m["group_instance_id"] else None
                if old is not None:
                    replaced.append(f"{m['group_instance_id']}: {old['member_id']} -> {member_id}")
                    before.pop(old["member_id"])
                else:
                    joined.append(_label(m))
            departed = [
                {
                    "member_id": _label(m),
                    "session_timeout_ms": m["session_timeout_ms"],
                    "assignment": m["assignment"] or [],
                }
                for member_id, m in before.items()
                if member_id not in members
            ]
            subscriptions = {tuple(m["topics"] or ()) for m in members.values()}
            earlier = {tuple(m["topics"] or ()) for m in before.values()}
            out.append(
                {
                    "group": group,
                    "generation": row["generation"],
                    "record_ms": row["record_ms"],
                    "state_ms": row["state_ms"],
                    "prev_ms": None if previous is None else previous["record_ms"],
                    "protocol_type": row["protocol_type"],
                    "protocol": row["protocol"],
                    "leader": row["leader"],
                    "member_count": len(members),
                    "members": sorted(_label(m) for m in members.values()),
                    "joined": joined,
                    "replaced": replaced,
                    "subscription_changed": bool(before and members) and subscriptions != earlier,
                    "emptied": bool(before) and not members and not row["deleted"],
                    "deleted": row["deleted"],
                    "departed": departed,
                }
            )
            previous = row
        yield pa.RecordBatch.from_pylist(out, schema=arrow)


def rebalance_history(
    generations: DataFrame, commits: DataFrame, *, on_driver: bool = False
) -> DataFrame:
    """The ``rebalances`` table: one row per stored generation, with its cause
    (``on_driver``: compare the generations on the driver, see arrow_map)."""
    changes = map_sorted(
        generations,
        _changes,
        _CHANGES_SCHEMA,
        keys=["group"],
        then=["offsets_offset"],
        on_driver=on_driver,
    ).withColumn("rebalance_id", F.concat_ws("/", "group", "record_ms", "generation"))
    departed = changes.select(
        "rebalance_id", "group", "prev_ms", "state_ms", F.explode("departed").alias("m")
    )
    owned = departed.select(
        "rebalance_id",
        "group",
        "prev_ms",
        "state_ms",
        F.col("m.member_id").alias("member"),
        F.col("m.session_timeout_ms").alias("session_timeout_ms"),
        F.explode_outer("m.assignment").alias("tp"),
    )
    # The last commit to each departed member's partitions before the rebalance:
    # commits and departures sorted together per partition, a running maximum
    # (a range join would pair every departure with every earlier commit).
    probes = owned.select(
        "group",
        F.col("tp.topic").alias("topic"),
        F.col("tp.partition").alias("partition"),
        F.col("state_ms").alias("t_ms"),
        F.lit(1).alias("_kind"),
        "rebalance_id",
        "member",
        "session_timeout_ms",
        "prev_ms",
        "state_ms",
    )
    points = commits.filter(~F.col("deleted")).select(
        "group",
        "topic",
        "partition",
        F.col("commit_ms").alias("t_ms"),
        F.lit(0).alias("_kind"),
        F.col("commit_ms").alias("_commit_ms"),
    )
    upto = (
        Window.partitionBy("group", "topic", "partition")
        .orderBy("t_ms", "_kind")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    seen = (
        points.unionByName(probes, allowMissingColumns=True)
        .withColumn("last_commit_ms", F.max("_commit_ms").over(upto))
        .filter(F.col("_kind") == 1)
        .groupBy("rebalance_id", "member", "session_timeout_ms", "prev_ms", "state_ms")
        .agg(F.max("last_commit_ms").alias("last_commit_ms"))
    )
    last_seen = F.greatest(F.col("prev_ms"), F.coalesce(F.col("last_commit_ms"), F.col("prev_ms")))
    # The session cannot have run out before last_seen + timeout: a departure
    # before then was a LeaveGroup.
    may_have_expired = F.col("state_ms") - last_seen >= F.col("session_timeout_ms")
    classified = seen.select(
        "rebalance_id",
        "member",
        may_have_expired.alias("ambiguous"),
        F.when(may_have_expired, last_seen + F.col("session_timeout_ms"))
        .otherwise(last_seen)
        .alias("since_ms"),
    )
    per_rebalance = classified.groupBy("rebalance_id").agg(
        F.sort_array(F.collect_list(F.when(~F.col("ambiguous"), F.col("member")))).alias("left"),
        F.sort_array(F.collect_list(F.when(F.col("ambiguous"), F.col("member")))).alias(
            "left_or_expired"
        ),
        F.min("since_ms").alias("since_ms"),
    )
    history = changes.join(per_rebalance, "rebalance_id", "left")
    parts = F.filter(
        F.array(
            F.when(F.col("deleted"), F.lit("group deleted")),
            F.when(F.col("prev_ms").isNull() & ~F.col("deleted"), F.lit("group created")),
            _listed("joined", "joined"),
            _listed("left", "left"),
            _listed("left_or_expired", "left or expired"),
            _listed("replaced", "static member replaced"),
            F.when(F.col("subscription_changed"), F.lit("subscription changed")),
        ),
        lambda part: part.isNotNull(),
    )
    cause = F.when(F.size(parts) > 0, F.concat_ws("; ", parts)).otherwise(F.lit("members rejoined"))
    start = F.least(F.coalesce("since_ms", "state_ms"), F.col("state_ms"))
    return history.select(
        "group",
        "generation",
        F.timestamp_millis("record_ms").alias("time"),
        "record_ms",
        "protocol_type",
        "protocol",
        "leader",
        "member_count",
        "members",
        "joined",
        F.coalesce("left", F.array().cast("array<string>")).alias("left"),
        F.coalesce("left_or_expired", F.array().cast("array<string>")).alias("left_or_expired"),
        "replaced",
        "emptied",
        "deleted",
        cause.alias("cause"),
        F.when(F.col("deleted"), F.lit(None))
        .otherwise(F.greatest(F.col("record_ms") - start, F.lit(0)))
        .alias("not_stable_ms"),
    )


def _listed(column: str, label: str) -> Column:
    return F.when(
        F.size(F.coalesce(F.col(column), F.array().cast("array<string>"))) > 0,
        F.concat(F.lit(f"{label}: "), F.concat_ws(", ", F.col(column))),
    )
