"""`kgroups groups list|describe|reset-offsets|delete|delete-offsets`: what
kafka-consumer-groups.sh does, with aligned tables and `--output json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kio.schema.consumer_group_describe.v1.response import Assignment as ConsumerGroupAssignment
from kio.schema.consumer_group_describe.v1.response import DescribedGroup as DescribedConsumerGroup

from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.errors import ErrorCode, KafkaError

# The admin client is imported when a command runs: the command line's parser,
# built for every command (`kgroups serve` too), imports this module.
if TYPE_CHECKING:
    from kgroups.client.admin import Admin, TopicPartition


def _admin(bootstrap: str, security: ClientSecurity) -> Admin:
    from kgroups.client.admin import Admin

    return Admin(bootstrap, security=security)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def check_datetime(value: str) -> None:
    """``--to-datetime`` as reset-offsets takes it: ISO 8601."""
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"--to-datetime {value!r} is not ISO 8601, e.g. 2026-11-23T12:00:00+00:00"
        ) from None


async def list_groups(
    bootstrap: str, states: list[str], output: str, security: ClientSecurity = PLAINTEXT
) -> str:
    admin = _admin(bootstrap, security)
    try:
        groups = await admin.list_groups(states)
    finally:
        await admin.close()
    # A broker older than ListGroups v5 names no type: it only has classic groups.
    rows = [(g.group_id, g.group_type or "classic", g.group_state, g.protocol_type) for g in groups]
    if output == "json":
        return json.dumps(
            [{"group": g, "type": k, "state": s, "protocol_type": t} for g, k, s, t in rows]
        )
    return table(("GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"), rows) if rows else "No groups."


@dataclass
class PartitionLag:
    topic: str
    partition: int
    committed_offset: int | None
    log_end_offset: int
    lag: int | None
    member_id: str
    host: str
    client_id: str


async def _coordinator_of(admin: Admin, group: str) -> dict[str, Any] | None:
    found = (await admin.find_coordinators([group]))[group]
    if isinstance(found, KafkaError):
        return None
    return {"broker_id": found[0], "host": found[1], "port": found[2]}


async def _partition_lags(
    admin: Admin,
    committed: dict[TopicPartition, int],
    owners: dict[TopicPartition, tuple[str, str, str]],
) -> list[PartitionLag]:
    """Lag of every partition the group committed to or a member owns."""
    from kgroups.client.admin import LATEST

    topics: dict[str, set[int]] = {}
    for topic, partition in list(committed) + list(owners):
        topics.setdefault(topic, set()).add(partition)
    lags = []
    for topic, numbers in sorted(topics.items()):
        try:
            ends = await admin.log_offsets(topic, numbers, LATEST)
        except KafkaError:
            ends = {}
        for p in sorted(numbers):
            end = ends.get(p, -1)
            offset = committed.get((topic, p))
            owner = owners.get((topic, p), ("-", "-", "-"))
            lag = None if offset is None or end < 0 else max(0, end - offset)
            lags.append(PartitionLag(topic, p, offset, end, lag, *owner))
    return lags


def _lag_table(lags: list[PartitionLag]) -> str:
    return table(
        ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"),
        [
            (
                lag.topic,
                lag.partition,
                "-" if lag.committed_offset is None else lag.committed_offset,
                lag.log_end_offset,
                "-" if lag.lag is None else lag.lag,
                lag.member_id,
            )
            for lag in lags
        ],
    )


def _coordinator_text(coordinator: dict[str, Any] | None) -> str:
    if coordinator is None:
        return ""
    return (
        f", coordinator broker {coordinator['broker_id']}"
        f" ({coordinator['host']}:{coordinator['port']})"
    )


async def describe(
    bootstrap: str, group: str, output: str, security: ClientSecurity = PLAINTEXT
) -> str:
    from kgroups.client.consumer_protocol import decode_assignment

    admin = _admin(bootstrap, security)
    try:
        consumer_group = await admin.describe_consumer_group(group)
        if consumer_group is not None:
            return await _describe_consumer_group(admin, consumer_group, output)
        described = await admin.describe(group)
        committed = await admin.committed(group)
        coordinator = await _coordinator_of(admin, group)
        owners: dict[TopicPartition, tuple[str, str, str]] = {}
        members: list[dict[str, Any]] = []
        for m in described.members:
            partitions = (
                decode_assignment(m.member_assignment)
                if described.protocol_type == "consumer" and m.member_assignment
                else []
            )
            for tp in partitions:
                owners[tp] = (m.member_id, m.client_host, m.client_id)
            members.append(
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "host": m.client_host,
                    "assignment": [f"{t}-{p}" for t, p in sorted(partitions)],
                }
            )
        lags = await _partition_lags(admin, committed, owners)
    finally:
        await admin.close()
    if described.group_state == "Dead" and not lags:
        raise KafkaError(ErrorCode.group_id_not_found, f"Consumer group '{group}' does not exist.")
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "type": "classic",
                "state": described.group_state,
                "protocol_type": described.protocol_type,
                "protocol": described.protocol_data,
                "coordinator": coordinator,
                "members": members,
                "partitions": [asdict(lag) for lag in lags],
            }
        )
    head = (
        f"Group {group}: {described.group_state}"
        + (f", protocol {described.protocol_data}" if described.protocol_data else "")
        + f", {len(members)} member(s)"
        + _coordinator_text(coordinator)
    )
    parts = [head]
    if members:
        parts.append(
            table(
                ("MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"),
                [
                    (m["member_id"], m["client_id"], m["host"], ",".join(m["assignment"]) or "-")
                    for m in members
                ],
            )
        )
    if lags:
        parts.append(_lag_table(lags))
    return "\n\n".join(parts)


def _partitions_of(assignment: ConsumerGroupAssignment) -> set[TopicPartition]:
    # A topic deleted since the assignment has no name any more: show its id.
    return {
        (t.topic_name or str(t.topic_id), p)
        for t in assignment.topic_partitions
        for p in t.partitions
    }


def _subscription(member: dict[str, Any]) -> str:
    """Topic names, and a regex between slashes."""
    parts = list(member["subscribed_topics"])
    if member["subscribed_topic_regex"]:
        parts.append(f"/{member['subscribed_topic_regex']}/")
    return ",".join(parts) or "-"


def _listed(partitions: set[TopicPartition]) -> list[str]:
    return [f"{t}-{p}" for t, p in sorted(partitions)]


async def _describe_consumer_group(
    admin: Admin, described: DescribedConsumerGroup, output: str
) -> str:
    """A consumer group (KIP-848), from ConsumerGroupDescribe: epochs, and each
    member's current and target assignment with what it still has to revoke or
    receive to reach its target."""
    group = described.group_id
    committed = await admin.committed(group)
    coordinator = await _coordinator_of(admin, group)
    owners: dict[TopicPartition, tuple[str, str, str]] = {}
    members: list[dict[str, Any]] = []
    for m in described.members:
        current = _partitions_of(m.assignment)
        target = _partitions_of(m.target_assignment)
        for tp in current:
            owners[tp] = (m.member_id, m.client_host, m.client_id)
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "member_epoch": m.member_epoch,
                "subscribed_topics": sorted(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or None,
                "assignment": _listed(current),
                "target_assignment": _listed(target),
                "revoking": _listed(current - target),
                "receiving": _listed(target - current),
            }
        )
    lags = await _partition_lags(admin, committed, owners)
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "type": "consumer",
                "state": described.group_state,
                "group_epoch": described.group_epoch,
                "assignment_epoch": described.assignment_epoch,
                "assignor": described.assignor_name,
                "coordinator": coordinator,
                "members": members,
                "partitions": [asdict(lag) for lag in lags],
            }
        )
    head = (
        f"Group {group}: {described.group_state} (consumer group), "
        f"group epoch {described.group_epoch}, assignment epoch {described.assignment_epoch}"
        + (f", assignor {described.assignor_name}" if described.assignor_name else "")
        + f", {len(members)} member(s)"
        + _coordinator_text(coordinator)
    )
    parts = [head]
    if members:
        parts.append(
            table(
                (
                    "MEMBER-ID",
                    "INSTANCE-ID",
                    "CLIENT-ID",
                    "HOST",
                    "EPOCH",
                    "SUBSCRIPTION",
                    "ASSIGNMENT",
                    "TARGET",
                    "TO-REVOKE",
                    "TO-RECEIVE",
                ),
                [
                    (
                        m["member_id"],
                        m["group_instance_id"] or "-",
                        m["client_id"],
                        m["host"],
                        m["member_epoch"],
                        _subscription(m),
                        *(
                            ",".join(m[key]) or "-"
                            for key in ("assignment", "target_assignment", "revoking", "receiving")
                        ),
                    )
                    for m in members
                ],
            )
        )
    if lags:
        parts.append(_lag_table(lags))
    return "\n\n".join(parts)


def parse_topic_partitions(spec: str) -> tuple[str, list[int] | None]:
    """`topic` or `topic:0,1,2`."""
    topic, sep, rest = spec.partition(":")
    if not sep:
        return topic, None
    try:
        return topic, [int(p) for p in rest.split(",") if p]
    except ValueError:
        raise ValueError(
            f"--topic {spec!r}: partitions must be numbers, as in {topic}:0,1"
        ) from None


async def reset_offsets(
    bootstrap: str,
    group: str,
    topic_specs: list[str],
    *,
    to_earliest: bool = False,
    to_latest: bool = False,
    to_offset: int | None = None,
    shift_by: int | None = None,
    to_datetime: str | None = None,
    execute: bool = False,
    output: str = "table",
    security: ClientSecurity = PLAINTEXT,
) -> str:
    from kgroups.client.admin import EARLIEST, LATEST

    admin = _admin(bootstrap, security)
    try:
        consumer_group = await admin.describe_consumer_group(group)
        members = (
            consumer_group.members
            if consumer_group is not None
            else (await admin.describe(group)).members
        )
        if members:
            raise KafkaError(
                ErrorCode.non_empty_group,
                f"Group '{group}' has {len(members)} active member(s); offsets can "
                "only be reset while the group is empty (stop its consumers first).",
            )
        committed = await admin.committed(group)
        plan: dict[TopicPartition, int] = {}
        for spec in topic_specs:
            topic, partitions = parse_topic_partitions(spec)
            info = await admin.cluster.topic(topic)
            chosen = sorted(info.partitions) if partitions is None else partitions
            for p in chosen:
                if p not in info.partitions:
                    raise KafkaError(
                        ErrorCode.unknown_topic_or_partition, f"{topic} has no partition {p}"
                    )
            earliest = await admin.log_offsets(topic, chosen, EARLIEST)
            latest = await admin.log_offsets(topic, chosen, LATEST)
            if to_datetime is not None:
                stamp = int(datetime.fromisoformat(to_datetime).timestamp() * 1000)
                at_time = await admin.log_offsets(topic, chosen, stamp)
            for p in chosen:
                if to_earliest:
                    target = earliest[p]
                elif to_latest:
                    target = latest[p]
                elif to_offset is not None:
                    target = to_offset
                elif shift_by is not None:
                    target = committed.get((topic, p), latest[p]) + shift_by
                else:
                    target = at_time[p]
                plan[(topic, p)] = min(max(target, earliest[p]), latest[p])
        if execute:
            await admin.commit(group, plan)
    finally:
        await admin.close()
    rows = [(t, p, committed.get((t, p), "-"), new) for (t, p), new in sorted(plan.items())]
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "executed": execute,
                "offsets": [
                    {"topic": t, "partition": p, "current": committed.get((t, p)), "new": n}
                    for (t, p), n in sorted(plan.items())
                ],
            }
        )
    note = "" if execute else "\n\n(dry run: nothing changed; add --execute to apply)"
    return table(("TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"), rows) + note


async def delete(bootstrap: str, group: str, security: ClientSecurity = PLAINTEXT) -> str:
    admin = _admin(bootstrap, security)
    try:
        await admin.delete_group(group)
    finally:
        await admin.close()
    return f"Deleted consumer group '{group}'."


async def delete_offsets(
    bootstrap: str, group: str, topic_spec: str, security: ClientSecurity = PLAINTEXT
) -> str:
    admin = _admin(bootstrap, security)
    try:
        topic, partitions = parse_topic_partitions(topic_spec)
        if partitions is None:
            partitions = sorted((await admin.cluster.topic(topic)).partitions)
        await admin.delete_offsets(group, topic, partitions)
    finally:
        await admin.close()
    return f"Deleted the committed offsets of group '{group}' for {topic_spec}."
