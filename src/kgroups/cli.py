"""`kgroups`: the command line. Parses arguments and hands over to commands/."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from kgroups import __version__
from kgroups.errors import KafkaError
from kgroups.server.config import ConfigError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kgroups",
        description="A Kafka-wire-compatible broker built around Kafka's group coordinator.",
    )
    parser.add_argument("--version", action="version", version=f"kgroups {__version__}")
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

    topics = commands.add_parser("topics", help="create, list, describe, delete topics")
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
    delete = topic_commands.add_parser("delete", help="delete a topic")
    delete.add_argument("name")
    for sub in (create, lister, describe, delete):
        _bootstrap(sub)

    produce = commands.add_parser(
        "produce", help="produce lines of stdin", description="Produce each line of stdin."
    )
    produce.add_argument("topic")
    produce.add_argument("--key-separator", help="split each line into key and value at SEP")
    produce.add_argument("--partition", type=int, help="send everything to this partition")
    produce.add_argument("--acks", type=int, choices=(-1, 0, 1), default=-1)
    _bootstrap(produce)

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
    return parser


def _bootstrap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"broker to connect to (default {DEFAULT_BOOTSTRAP})",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except ConfigError as e:
        print(f"kgroups: configuration error: {e}", file=sys.stderr)
        return 2
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
    if args.command == "serve":
        from kgroups.commands import serve

        logging.basicConfig(
            level=args.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        return serve.run(args.config, args.override)
    if args.command == "topics":
        from kgroups.commands import topics

        bootstrap = args.bootstrap_server
        if args.action == "create":
            print(asyncio.run(topics.create(bootstrap, args.name, args.partitions, args.config)))
        elif args.action == "list":
            print(asyncio.run(topics.list_topics(bootstrap, args.include_internal)))
        elif args.action == "describe":
            print(asyncio.run(topics.describe(bootstrap, args.names)))
        elif args.action == "delete":
            print(asyncio.run(topics.delete(bootstrap, args.name)))
        return 0
    if args.command == "produce":
        from kgroups.commands import produce

        count = asyncio.run(
            produce.run(
                args.bootstrap_server, args.topic, args.key_separator, args.partition, args.acks
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
            )
        )
        return 0
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
