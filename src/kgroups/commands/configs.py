"""`kgroups configs describe|alter`, as kafka-configs.sh: a topic's, a group's,
a broker's or a client metrics subscription's dynamic configs, changed with
IncrementalAlterConfigs.

``--add-config k=v,k2=[a,b]`` sets keys (a list value in brackets, as
kafka-configs.sh writes it), ``--delete-config k,k2`` removes overrides,
``--append-config`` / ``--subtract-config`` add items to or take them from a
list (``cleanup.policy``). A broker is named by id, or ``--entity-default``
for the cluster-wide default. ``describe --entity-type client-metrics``
without a name describes every subscription, as kafka-configs.sh does.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kgroups.client.config_admin import (
    APPEND,
    BROKER,
    CLIENT_METRICS,
    DELETE,
    GROUP,
    SET,
    SUBTRACT,
    TOPIC,
    ConfigEntry,
    Op,
)
from kgroups.client.security import ClientSecurity
from kgroups.commands.usage import UsageError

__all__ = ["add_arguments", "add_parsers", "parse_pairs", "run"]

_TYPES = {"topics": TOPIC, "brokers": BROKER, "groups": GROUP, "client-metrics": CLIENT_METRICS}
_SINGULAR = {
    "topics": "topic",
    "brokers": "broker",
    "groups": "group",
    "client-metrics": "client-metric",
}
# DescribeConfigs sources, by number.
_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
_STATIC = frozenset({4, 5})


def add_parsers(commands: Any) -> list[argparse.ArgumentParser]:
    """``configs describe`` and ``configs alter`` under the CLI's commands."""
    configs = commands.add_parser("configs", help="describe, alter configs (kafka-configs.sh)")
    actions = configs.add_subparsers(dest="action", metavar="ACTION", required=True)
    parsers = []
    for action in ("describe", "alter"):
        parser = actions.add_parser(action, help=f"{action} a resource's configs")
        add_arguments(parser, action)
        parsers.append(parser)
    return parsers


def add_arguments(parser: argparse.ArgumentParser, action: str) -> None:
    parser.add_argument("--entity-type", required=True, choices=sorted(_TYPES))
    parser.add_argument(
        "--entity-name", help="topic, group, broker id or client metrics subscription"
    )
    parser.add_argument(
        "--entity-default", action="store_true", help="brokers: the cluster-wide default"
    )
    parser.add_argument("--output", choices=("table", "json"), default="table")
    if action == "describe":
        parser.add_argument("--all", action="store_true", help="every config, not only dynamic")
        return
    for flag, text in (
        ("--add-config", "k=v,k2=[a,b]: set keys"),
        ("--delete-config", "k,k2: remove overrides"),
        ("--append-config", "k=[a,b]: add items to a list"),
        ("--subtract-config", "k=[a,b]: take items from a list"),
    ):
        parser.add_argument(flag, action="append", default=[], help=text)
    parser.add_argument("--validate-only", action="store_true", help="check, change nothing")


async def run(args: argparse.Namespace, security: ClientSecurity) -> str:
    every_subscription = (
        args.action == "describe" and args.entity_type == "client-metrics" and not args.entity_name
    )
    resource = (CLIENT_METRICS, "") if every_subscription else _resource(args)
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client.admin import Admin

    admin = Admin(args.bootstrap_server, security=security)
    try:
        if every_subscription:
            names = await admin.list_client_metrics_resources()
            return _every_subscription(
                args, {n: await admin.describe_configs((CLIENT_METRICS, n)) for n in names}
            )
        if args.action == "describe":
            entries = await admin.describe_configs(resource)
            return _described(args, entries)
        ops = _ops(args)
        results = await admin.incremental_alter_configs(
            {resource: ops}, validate_only=args.validate_only
        )
    finally:
        await admin.close()
    error = results.get(resource)
    if error is not None:
        raise error
    what = _what(args)
    if args.output == "json":
        return json.dumps({"resource": what, "validate_only": args.validate_only, "ops": len(ops)})
    verb = "Validated" if args.validate_only else "Completed updating"
    return f"{verb} config for {what}."


def parse_pairs(text: str, flag: str) -> list[tuple[str, str]]:
    """``k=v,k2=[a,b]`` as (key, value) pairs, list brackets dropped."""
    pairs: list[tuple[str, str]] = []
    depth, start = 0, 0
    parts = []
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {text!r}: expected key=value[,key=value...]")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        pairs.append((key.strip(), value))
    return pairs


def _resource(args: argparse.Namespace) -> tuple[int, str]:
    rtype = _TYPES[args.entity_type]
    if args.entity_default:
        if rtype != BROKER or args.entity_name is not None:
            raise UsageError("--entity-default is for --entity-type brokers, without a name")
        return rtype, ""
    if not args.entity_name:
        raise UsageError("--entity-name is required (or --entity-default for brokers)")
    return rtype, args.entity_name


def _ops(args: argparse.Namespace) -> list[Op]:
    ops: list[Op] = []
    for text in args.add_config:
        ops += [(k, SET, v) for k, v in parse_pairs(text, "--add-config")]
    for text in args.append_config:
        ops += [(k, APPEND, v) for k, v in parse_pairs(text, "--append-config")]
    for text in args.subtract_config:
        ops += [(k, SUBTRACT, v) for k, v in parse_pairs(text, "--subtract-config")]
    for text in args.delete_config:
        ops += [(k.strip(), DELETE, None) for k in text.split(",") if k.strip()]
    if not ops:
        raise UsageError(
            "nothing to alter: give --add-config, --delete-config, --append-config "
            "or --subtract-config"
        )
    return ops


def _what(args: argparse.Namespace) -> str:
    if args.entity_default:
        return "default brokers"
    return f"{_SINGULAR[args.entity_type]} {args.entity_name}"


def _every_subscription(args: argparse.Namespace, entries: dict[str, list[ConfigEntry]]) -> str:
    if args.output == "json":
        return json.dumps({name: _json_entries(e) for name, e in entries.items()}, indent=2)
    texts = []
    for name, described in entries.items():
        args.entity_name = name
        texts.append(_described(args, described))
    return "\n".join(texts)


def _json_entries(shown: list[ConfigEntry]) -> list[dict[str, Any]]:
    return [
        {
            "name": e.name,
            "value": e.value,
            "source": _SOURCES.get(e.source, str(e.source)),
            "sensitive": e.sensitive,
            "read_only": e.read_only,
        }
        for e in shown
    ]


def _described(args: argparse.Namespace, entries: list[ConfigEntry]) -> str:
    shown = [e for e in entries if args.all or e.source not in _STATIC]
    if args.output == "json":
        return json.dumps(_json_entries(shown), indent=2)
    kind = "All" if args.all else "Dynamic"
    lines = [f"{kind} configs for {_what(args)} are:"]
    for e in shown:
        value = "null" if e.sensitive or e.value is None else e.value
        source = _SOURCES.get(e.source, str(e.source))
        lines.append(f"  {e.name}={value} sensitive={str(e.sensitive).lower()} source={source}")
    return "\n".join(lines)
