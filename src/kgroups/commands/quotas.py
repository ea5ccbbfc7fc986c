"""`kgroups quotas describe|alter`, as kafka-configs.sh sets client quotas.

An entity is named as kafka-configs.sh names it: ``--entity-type users|clients|ips``,
each followed by ``--entity-name NAME`` or ``--entity-default``; a user and a
client id together name both types, each with its own name or default.
``--add-config producer_byte_rate=1048576,consumer_byte_rate=2097152`` sets
quotas, ``--delete-config request_percentage`` removes them. ``describe`` with
an entity shows exactly that entity; with a type and no name, every entity of
the type; with nothing, every quota.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from kgroups.client.quota_admin import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    Change,
    Filter,
    QuotaEntity,
    QuotaEntry,
)
from kgroups.client.security import ClientSecurity
from kgroups.commands.configs import parse_pairs
from kgroups.commands.usage import UsageError

__all__ = ["add_parsers", "run"]

_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
_LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
_UNNAMED = object()  # a type given without --entity-name or --entity-default


class _EntityType(argparse.Action):
    def __call__(self, parser: Any, ns: Any, values: Any, option: Any = None) -> None:
        ns.entities = [*(ns.entities or []), [_TYPES[values], _UNNAMED]]


class _EntityName(argparse.Action):
    def __call__(self, parser: Any, ns: Any, values: Any, option: Any = None) -> None:
        _name_last(ns, values, option)


class _EntityDefault(argparse.Action):
    def __call__(self, parser: Any, ns: Any, values: Any, option: Any = None) -> None:
        _name_last(ns, None, option)


def _name_last(ns: Any, name: str | None, option: Any) -> None:
    if not ns.entities or ns.entities[-1][1] is not _UNNAMED:
        # Refused when run (a UsageError here would escape the CLI's handling).
        ns.entities = [*(ns.entities or []), [None, option]]
        return
    ns.entities[-1][1] = name


def _check_order(entities: Sequence[list[Any]]) -> None:
    for etype, option in entities:
        if etype is None:
            raise UsageError(f"{option} must follow an --entity-type")


def add_parsers(commands: Any) -> list[argparse.ArgumentParser]:
    quotas = commands.add_parser("quotas", help="describe, alter client quotas (kafka-configs.sh)")
    actions = quotas.add_subparsers(dest="action", metavar="ACTION", required=True)
    parsers = []
    for action in ("describe", "alter"):
        parser = actions.add_parser(action, help=f"{action} client quotas")
        parser.set_defaults(entities=[])
        parser.add_argument("--entity-type", action=_EntityType, choices=sorted(_TYPES))
        parser.add_argument("--entity-name", action=_EntityName, help="user, client id or IP")
        parser.add_argument(
            "--entity-default", action=_EntityDefault, nargs=0, help="the type's default"
        )
        parser.add_argument("--output", choices=("table", "json"), default="table")
        if action == "alter":
            parser.add_argument(
                "--add-config", action="append", default=[], help="k=v,k2=v2: set quotas"
            )
            parser.add_argument(
                "--delete-config", action="append", default=[], help="k,k2: remove quotas"
            )
            parser.add_argument("--validate-only", action="store_true", help="check only")
        parsers.append(parser)
    return parsers


async def run(args: argparse.Namespace, security: ClientSecurity) -> str:
    _check_order(args.entities)
    if args.action == "alter":
        entity = _entity(args.entities)
        changes = _changes(args)
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client.admin import Admin

    admin = Admin(args.bootstrap_server, security=security)
    try:
        if args.action == "describe":
            components, strict = _filter(args.entities)
            entries = await admin.describe_client_quotas(components, strict=strict)
            return _described(args, entries)
        results = await admin.alter_client_quotas(
            {entity: changes}, validate_only=args.validate_only
        )
    finally:
        await admin.close()
    error = next(iter(results.values()), None)
    if error is not None:
        raise error
    what = _what(entity)
    if args.output == "json":
        return json.dumps(
            {
                "entity": _entity_json(entity),
                "validate_only": args.validate_only,
                "ops": len(changes),
            }
        )
    verb = "Validated" if args.validate_only else "Completed updating"
    return f"{verb} config for {what}."


def _entity(entities: Sequence[list[Any]]) -> QuotaEntity:
    if not entities:
        raise UsageError("--entity-type is required")
    parts = []
    for etype, name in entities:
        if name is _UNNAMED:
            raise UsageError(f"--entity-type {etype}: give --entity-name or --entity-default")
        parts.append((etype, name))
    return tuple(parts)


def _filter(entities: Sequence[list[Any]]) -> tuple[list[Filter], bool]:
    components: list[Filter] = []
    for etype, name in entities:
        if name is _UNNAMED:
            components.append((etype, MATCH_ANY, None))
        elif name is None:
            components.append((etype, MATCH_DEFAULT, None))
        else:
            components.append((etype, MATCH_EXACT, name))
    # As kafka-configs.sh: the entities of exactly the types named.
    return components, bool(components)


def _changes(args: argparse.Namespace) -> list[Change]:
    changes: list[Change] = []
    for text in args.add_config:
        for key, value in parse_pairs(text, "--add-config"):
            try:
                changes.append((key, float(value)))
            except ValueError:
                raise UsageError(f"--add-config {key}={value}: not a number") from None
    for text in args.delete_config:
        changes += [(k.strip(), None) for k in text.split(",") if k.strip()]
    if not changes:
        raise UsageError("nothing to alter: give --add-config or --delete-config")
    return changes


def _what(entity: QuotaEntity) -> str:
    ordered = sorted(entity, key=lambda part: list(_LABELS).index(part[0]))
    return ", ".join(
        f"default {_LABELS[t]}" if n is None else f"{_LABELS[t]} '{n}'" for t, n in ordered
    )


def _entity_json(entity: QuotaEntity) -> dict[str, str | None]:
    return dict(entity)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _described(args: argparse.Namespace, entries: list[QuotaEntry]) -> str:
    if args.output == "json":
        return json.dumps(
            [{"entity": _entity_json(e.entity), "values": e.values} for e in entries], indent=2
        )
    if not entries:
        return "No quotas match."
    return "\n".join(
        f"Quota configs for {_what(e.entity)} are "
        + ", ".join(f"{k}={_number(v)}" for k, v in sorted(e.values.items()))
        for e in entries
    )
