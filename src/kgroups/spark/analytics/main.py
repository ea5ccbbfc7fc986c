"""The analytics job's command line: ``kgroups analytics`` and ``spark-submit``.

    spark-submit --master spark://host:7077 \
        "$(python -c 'import kgroups.spark.analytics.main as m; print(m.__file__)')" \
        --bootstrap-server broker:9092 --output hdfs:///reports/groups

Arguments are parsed before Spark starts, so a mistake costs no JVM start-up.
Without --master, the master comes from spark-submit or defaults to local[*].
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from kgroups.extras import require

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default="127.0.0.1:9092",
        metavar="HOST:PORT",
        help="cluster to analyse (default 127.0.0.1:9092)",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="client properties: security.protocol, ssl.*, sasl.* (Kafka's names)",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="PATH",
        help="directory for the Parquet tables and report.html (any Hadoop path)",
    )
    parser.add_argument("--offsets-topic", default="__consumer_offsets", metavar="TOPIC")
    parser.add_argument(
        "--share-state-topic",
        default="__share_group_state",
        metavar="TOPIC",
        help="share partitions' stored delivery state (default __share_group_state)",
    )
    parser.add_argument("--groups", metavar="REGEX", help="only groups whose id matches")
    parser.add_argument(
        "--window", type=int, default=10, help="commits per Burrow window (default 10)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="seconds between status evaluations (default: 1/120 of the history)",
    )
    parser.add_argument(
        "--now",
        metavar="ISO8601|MS",
        help="evaluate the current status at this time instead of the wall clock",
    )
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument(
        "--spark-ui",
        action="store_true",
        help="start Spark's web UI and show its console progress bars (off by default)",
    )
    parser.add_argument(
        "--follow", action="store_true", help="keep a live lag/status table up to date"
    )
    parser.add_argument(
        "--once", action="store_true", help="with --follow: read what is there now, then stop"
    )
    parser.add_argument(
        "--trigger-seconds", type=float, default=10.0, help="with --follow (default 10)"
    )
    parser.add_argument("--checkpoint", metavar="PATH", help="with --follow (default OUTPUT/...)")


def _now_ms(value: str | None) -> int | None:
    if value is None:
        return None
    if re.fullmatch(r"\d+", value):
        return int(value)
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except ValueError:
        raise ValueError(f"--now {value!r} is neither ISO 8601 nor epoch milliseconds") from None


def run(args: argparse.Namespace) -> int:
    for package in ("pyspark", "pyarrow", "pandas"):
        require(package, "kgroups analytics")
    if args.window < 2:
        raise ValueError("--window must be at least 2 commits")
    now_ms = _now_ms(args.now)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kgroups.commands.command_config import read_properties, security_from
    from kgroups.spark.analytics.follow import follow
    from kgroups.spark.analytics.job import AnalyticsConfig, run_analytics
    from kgroups.spark.analytics.session import analytics_session, log_records

    security_from(args.command_config)  # a bad file fails before Spark starts
    security_keys = {} if args.command_config is None else read_properties(args.command_config)
    records = log_records(args.bootstrap_server, args.offsets_topic, security_keys)
    # The data source is registered when a read needs it (kgroups.spark.register):
    # registering makes Spark look up Python data sources in a process of its own,
    # which a small log, read on the driver, can do without.
    spark = analytics_session(args.master, spark_ui=args.spark_ui, records=records)
    config = AnalyticsConfig(
        bootstrap=args.bootstrap_server,
        output=args.output,
        offsets_topic=args.offsets_topic,
        share_state_topic=args.share_state_topic,
        groups=args.groups,
        window=args.window,
        interval_ms=None if args.interval is None else int(args.interval * 1000),
        now_ms=now_ms,
        security_keys=security_keys,
    )
    try:
        if args.follow:
            follow(
                spark,
                config,
                checkpoint=args.checkpoint,
                once=args.once,
                trigger_seconds=args.trigger_seconds,
            )
        else:
            summary = run_analytics(spark, config)
            statuses = ", ".join(f"{g} {s}" for g, s in sorted(summary["status"].items()))
            print(
                f"{summary['commits']} commits of {summary['groups']} groups analysed; "
                f"now: {statuses or 'no groups'}; tables and report.html in {args.output}"
            )
    finally:
        spark.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kgroups-analytics", description="Consumer-group analytics on Spark."
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
