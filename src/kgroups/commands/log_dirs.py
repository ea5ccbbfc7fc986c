"""`kgroups log-dirs describe`: kafka-log-dirs.sh over the wire.

Every broker asked (``--broker-list``, else all of them) answers
DescribeLogDirs for its log directories; ``--topic-list`` keeps the
partitions of those topics. ``--output json`` prints the JSON
kafka-log-dirs.sh prints (``{"version": 1, "brokers": [...]}``), each log
directory with its volume's ``totalBytes`` and ``usableBytes`` besides
(-1 when the broker cannot tell); the table has a row per partition.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.commands.groups import table
from kgroups.commands.usage import UsageError
from kgroups.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from kgroups.client.log_dirs import LogDirDescription

__all__ = ["add_arguments", "broker_list", "describe", "run", "topic_list"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topic-list",
        default="",
        metavar="T1,T2",
        help="the topics to show (default: all)",
    )
    parser.add_argument(
        "--broker-list",
        default="",
        metavar="1,2",
        help="the brokers to ask (default: all brokers of the cluster)",
    )
    parser.add_argument("--output", choices=("table", "json"), default="table")


def topic_list(text: str) -> set[str]:
    return {t.strip() for t in text.split(",") if t.strip()}


def broker_list(text: str) -> list[int]:
    brokers: list[int] = []
    for item in (b.strip() for b in text.split(",")):
        if not item:
            continue
        try:
            broker = int(item)
        except ValueError:
            raise UsageError(f"--broker-list: {item!r} is not a broker id") from None
        if broker < 0:
            raise UsageError(f"--broker-list: {item!r} is not a broker id")
        brokers.append(broker)
    return sorted(set(brokers))


async def run(args: argparse.Namespace, security: ClientSecurity = PLAINTEXT) -> str:
    return await describe(
        args.bootstrap_server, args.topic_list, args.broker_list, args.output, security
    )


async def describe(
    bootstrap: str,
    topics_text: str,
    brokers_text: str,
    output: str,
    security: ClientSecurity = PLAINTEXT,
) -> str:
    topics, asked = topic_list(topics_text), broker_list(brokers_text)
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client.admin import Admin

    admin = Admin(bootstrap, security=security)
    try:
        await admin.cluster.refresh([])
        existing = sorted(admin.cluster.metadata.brokers)
        missing = [b for b in asked if b not in existing]
        if missing:
            raise UsageError(
                "The given brokers do not exist from --broker-list: "
                f"{_ids(missing)}. Current existent brokers: {_ids(existing)}"
            )
        described = await admin.describe_log_dirs(asked or existing)
    finally:
        await admin.close()
    by_broker: dict[int, list[LogDirDescription]] = {}
    for broker, dirs in sorted(described.items()):
        if isinstance(dirs, KafkaError):
            raise KafkaError(dirs.error_code, f"broker {broker}: {dirs.message or ''}".rstrip())
        by_broker[broker] = dirs
    if output == "json":
        return json.dumps(_as_json(by_broker, topics))
    return _as_table(by_broker, topics)


def _shown(topic: str, topics: set[str]) -> bool:
    return not topics or topic in topics


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))


def _error(error: ErrorCode) -> str | None:
    return None if error == ErrorCode.none else error.name.upper()


def _as_json(by_broker: dict[int, list[LogDirDescription]], topics: set[str]) -> dict[str, Any]:
    return {
        "version": 1,
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": d.path,
                        "error": _error(d.error),
                        "partitions": [
                            {
                                "partition": f"{t}-{p}",
                                "size": r.size,
                                "offsetLag": r.offset_lag,
                                "isFuture": r.is_future,
                            }
                            for (t, p), r in sorted(d.replicas.items())
                            if _shown(t, topics)
                        ],
                        "totalBytes": d.total_bytes,
                        "usableBytes": d.usable_bytes,
                    }
                    for d in dirs
                ],
            }
            for broker, dirs in by_broker.items()
        ],
    }


def _as_table(by_broker: dict[int, list[LogDirDescription]], topics: set[str]) -> str:
    rows: list[tuple[object, ...]] = []
    for broker, dirs in by_broker.items():
        for d in dirs:
            error = _error(d.error) or "-"
            shown = [
                (tp, r) for tp, r in sorted(d.replicas.items()) if not topics or tp[0] in topics
            ]
            if not shown:
                rows.append((broker, d.path, "-", "-", "-", "-", error))
            for (t, p), r in shown:
                rows.append((broker, d.path, f"{t}-{p}", r.size, r.offset_lag, r.is_future, error))
    headers = ("BROKER", "LOG-DIR", "PARTITION", "SIZE", "OFFSET-LAG", "IS-FUTURE", "ERROR")
    return table(headers, rows)
