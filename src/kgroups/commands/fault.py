"""`kgroups fault`: set or clear a fault on a broker through its fault admin
endpoint (``fault.admin.port``), for test suites in any language."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kgroups.testing.faults import http_runner

# Action -> its options (argparse destination names are the endpoint's arguments).
_OPTIONS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "coordinator-error": (
        ("--group", {"help": "one group (default: every group)"}),
        (
            "--error",
            {
                "default": "NOT_COORDINATOR",
                "help": "NOT_COORDINATOR (default), COORDINATOR_NOT_AVAILABLE "
                "or COORDINATOR_LOAD_IN_PROGRESS",
            },
        ),
    ),
    "move-coordinator": (("--group", {"required": True}),),
    "force-rebalance": (("--group", {"required": True}),),
    "expire-member": (("--group", {"required": True}), ("--member", {"required": True})),
    "delay": (
        ("--api", {"required": True, "help": "a Kafka API name: Fetch, Produce, ..."}),
        ("--ms", {"required": True, "type": float, "help": "0 removes the delay"}),
    ),
    "drop": (
        ("--api", {"required": True, "help": "a Kafka API name: Fetch, Produce, ..."}),
        ("--count", {"type": int, "help": "answers to drop (default: all until cleared)"}),
    ),
    "fail-appends": (
        ("--topic", {"help": "one topic (default: every topic, offset commits included)"}),
        ("--error", {"default": "KAFKA_STORAGE_ERROR"}),
    ),
    "pause-partition": (
        ("--topic", {"required": True}),
        ("--partition", {"required": True, "type": int}),
    ),
    "resume-partition": (
        ("--topic", {"required": True}),
        ("--partition", {"required": True, "type": int}),
    ),
    "clear": (),
}

_HELP = {
    "coordinator-error": "group requests answer a coordinator error",
    "move-coordinator": "the group's coordinator fails over (reloads from the log)",
    "force-rebalance": "the group rebalances now",
    "expire-member": "the member's session times out now",
    "delay": "answers to an API leave later",
    "drop": "answers to an API are not sent",
    "fail-appends": "appends fail, as on a full disk",
    "pause-partition": "fetches of a partition return no records",
    "resume-partition": "undo pause-partition",
    "clear": "remove every fault",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--admin",
        required=True,
        metavar="URL",
        help="the broker's fault admin endpoint, http://127.0.0.1:PORT (fault.admin.port)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, options in _OPTIONS.items():
        sub = actions.add_parser(action, help=_HELP[action])
        for flag, kwargs in options:
            sub.add_argument(flag, **kwargs)
    actions.add_parser("show", help="print the faults set")


def run(args: argparse.Namespace) -> str:
    """The faults set after the action, as JSON."""
    names = [flag[2:] for flag, _ in _OPTIONS.get(args.action, ())]
    arguments = {name: getattr(args, name) for name in names}
    action = "" if args.action == "show" else args.action
    return json.dumps(http_runner(args.admin.rstrip("/"))(action, arguments), indent=2)
