"""`kgroups share-groups list|describe|reset-offsets|delete-offsets`: what
kafka-share-groups.sh does for share groups (KIP-932), with aligned tables and
`--output json` like `kgroups groups`.

A share group keeps no committed offsets: its progress is each share
partition's start offset (records before it are done), and its lag the
records from there to the high watermark not yet acknowledged or archived.
Offsets are reset or deleted only while the group has no members.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kgroups.client.security import ClientSecurity
from kgroups.commands.groups import check_datetime, parse_topic_partitions, table
from kgroups.errors import ErrorCode, KafkaError

# The admin client is imported when the command runs: the command line's
# parser, built for every command (`kgroups serve` too), imports this module.
if TYPE_CHECKING:
    from kgroups.client.admin import Admin, TopicPartition
    from kgroups.client.share_group_admin import DescribedShareGroup

__all__ = ["add_parsers", "run"]


def add_parsers(commands: Any) -> list[argparse.ArgumentParser]:
    share = commands.add_parser(
        "share-groups", help="list, describe and reset share groups (kafka-share-groups.sh)"
    )
    actions = share.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="share groups and their state")
    listing.add_argument(
        "--state", action="append", default=[], help="only groups in this state (repeatable)"
    )
    describe = actions.add_parser(
        "describe", help="a share group's offsets and lag (default), members or state"
    )
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="start offset and lag (default)")
    view.add_argument("--members", action="store_true", help="members and their partitions")
    view.add_argument("--state", action="store_true", help="state, epochs and coordinator")
    reset = actions.add_parser(
        "reset-offsets", help="move share partitions' start offsets (the group must be empty)"
    )
    reset.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="TOPIC[:P,...]",
        help="topic, optionally with partitions; repeatable",
    )
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-datetime", metavar="ISO8601", help="e.g. 2026-11-23T12:00:00+00:00")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="set the new start offsets")
    delete = actions.add_parser(
        "delete-offsets", help="forget topics' share partitions (the group must be empty)"
    )
    delete.add_argument("--topic", action="append", required=True, help="repeatable")
    parsers = [listing, describe, reset, delete]
    for parser in (describe, reset, delete):
        parser.add_argument("--group", required=True)
    for parser in parsers:
        parser.add_argument("--output", choices=("table", "json"), default="table")
    return parsers


async def run(args: argparse.Namespace, security: ClientSecurity) -> str:
    if args.action == "reset-offsets" and args.to_datetime is not None:
        check_datetime(args.to_datetime)
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client.admin import Admin

    admin = Admin(args.bootstrap_server, security=security)
    try:
        if args.action == "list":
            return await _list(admin, args.state, args.output)
        if args.action == "describe":
            if args.members:
                return await _members(admin, args.group, args.output)
            if args.state:
                return await _state(admin, args.group, args.output)
            return await _offsets(admin, args.group, args.output)
        if args.action == "reset-offsets":
            return await _reset(admin, args)
        return await _delete_offsets(admin, args.group, args.topic, args.output)
    finally:
        await admin.close()


async def _list(admin: Admin, states: list[str], output: str) -> str:
    groups = [g for g in await admin.list_groups(states) if g.group_type == "share"]
    rows = [(g.group_id, g.group_state) for g in groups]
    if output == "json":
        return json.dumps([{"group": g, "state": s} for g, s in rows])
    return table(("GROUP", "STATE"), rows) if rows else "No share groups."


def _partitions(member: Any) -> list[str]:
    return sorted(
        f"{t.topic_name}-{p}" for t in member.assignment.topic_partitions for p in t.partitions
    )


async def _members(admin: Admin, group: str, output: str) -> str:
    described = await admin.describe_share_group(group)
    members: list[dict[str, Any]] = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "subscribed_topics": sorted(m.subscribed_topic_names),
            "assignment": _partitions(m),
        }
        for m in described.members
    ]
    if output == "json":
        return json.dumps({"group": group, "members": members})
    if not members:
        return f"Share group '{group}' has no active members."
    return table(
        ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "EPOCH", "#PARTITIONS", "ASSIGNMENT"),
        [
            (
                group,
                m["member_id"],
                m["host"],
                m["client_id"],
                m["member_epoch"],
                len(m["assignment"]),
                ",".join(m["assignment"]) or "-",
            )
            for m in members
        ],
    )


async def _state(admin: Admin, group: str, output: str) -> str:
    described = await admin.describe_share_group(group)
    found = (await admin.find_coordinators([group]))[group]
    coordinator = None if isinstance(found, KafkaError) else found
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "state": described.group_state,
                "group_epoch": described.group_epoch,
                "assignment_epoch": described.assignment_epoch,
                "assignor": described.assignor_name,
                "members": len(described.members),
                "coordinator": None
                if coordinator is None
                else {"broker_id": coordinator[0], "host": coordinator[1], "port": coordinator[2]},
            }
        )
    where = "-" if coordinator is None else f"{coordinator[1]}:{coordinator[2]} ({coordinator[0]})"
    return table(
        ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
        [
            (
                group,
                where,
                described.group_state,
                described.group_epoch,
                described.assignment_epoch,
                len(described.members),
            )
        ],
    )


async def _offsets(admin: Admin, group: str, output: str) -> str:
    described = await admin.describe_share_group(group)
    offsets = await admin.describe_share_group_offsets(group)
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "state": described.group_state,
                "partitions": [
                    {
                        "topic": o.topic,
                        "partition": o.partition,
                        "start_offset": o.start_offset,
                        "lag": o.lag,
                    }
                    for o in offsets
                ],
            }
        )
    if not offsets:
        return f"Share group '{group}' has no share partitions yet."
    return table(
        ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"),
        [
            (
                group,
                o.topic,
                o.partition,
                "-" if o.start_offset < 0 else o.start_offset,
                "-" if o.lag is None else o.lag,
            )
            for o in offsets
        ],
    )


async def _empty_or_missing(admin: Admin, group: str) -> None:
    """Offsets change only while nobody consumes (the broker checks again)."""
    described: DescribedShareGroup | None
    try:
        described = await admin.describe_share_group(group)
    except KafkaError as e:
        if e.error_code != ErrorCode.group_id_not_found:
            raise
        described = None
    if described is not None and described.members:
        raise KafkaError(
            ErrorCode.non_empty_group,
            f"Share group '{group}' has {len(described.members)} active member(s); its "
            "offsets can only be changed while it is empty (stop its consumers first).",
        )


async def _reset(admin: Admin, args: argparse.Namespace) -> str:
    from kgroups.client.admin import EARLIEST, LATEST

    group: str = args.group
    await _empty_or_missing(admin, group)
    plan: dict[TopicPartition, int] = {}
    for spec in args.topic:
        topic, partitions = parse_topic_partitions(spec)
        info = await admin.cluster.topic(topic)
        chosen = sorted(info.partitions) if partitions is None else partitions
        for p in chosen:
            if p not in info.partitions:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"{topic} has no partition {p}"
                )
        if args.to_earliest:
            targets = await admin.log_offsets(topic, chosen, EARLIEST)
        elif args.to_latest:
            targets = await admin.log_offsets(topic, chosen, LATEST)
        else:
            stamp = int(datetime.fromisoformat(args.to_datetime).timestamp() * 1000)
            targets = await admin.log_offsets(topic, chosen, stamp)
        plan.update({(topic, p): targets[p] for p in chosen})
    if args.execute:
        await admin.alter_share_group_offsets(group, plan)
    if args.output == "json":
        return json.dumps(
            {
                "group": group,
                "executed": bool(args.execute),
                "offsets": [
                    {"topic": t, "partition": p, "new": o} for (t, p), o in sorted(plan.items())
                ],
            }
        )
    rows = [(group, t, p, o) for (t, p), o in sorted(plan.items())]
    note = "" if args.execute else "\n\n(dry run: nothing changed; add --execute to apply)"
    return table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), rows) + note


async def _delete_offsets(admin: Admin, group: str, topics: list[str], output: str) -> str:
    results = await admin.delete_share_group_offsets(group, topics)
    if output == "json":
        return json.dumps(
            {
                "group": group,
                "topics": [
                    {"topic": t, "error": None if e is None else e.error_code.name.upper()}
                    for t, e in sorted(results.items())
                ],
            }
        )
    failed = [e for e in results.values() if e is not None]
    text = table(
        ("TOPIC", "STATUS"),
        [
            (t, "Successful" if e is None else f"Error: {e.error_code.name.upper()}")
            for t, e in sorted(results.items())
        ],
    )
    if failed:
        raise KafkaError(failed[0].error_code, text)
    return text
