"""``kgroups analytics``: the batch job over a cluster's offsets topic.

Steps, each reported on stderr as it starts and ends:

1. read and decode the offsets topic through the kgroups data source;
2. write the ``commits`` and ``generations`` tables;
3. read the committed-to topics' offset -> timestamp index;
4. write ``lag`` (each commit's lag in offsets and in seconds);
5. evaluate Burrow's rules at regular ticks: ``partition_status`` and
   ``group_status`` (the ticks at ``now`` are the current status);
6. write ``rebalances`` (each generation with its inferred cause) and
   ``epochs`` (each epoch move of each consumer group);
7. read the share state topic and write ``share_state`` (each share
   partition's stored delivery state, record by record) and
   ``share_epochs`` (each epoch move of each share group);
8. write ``report.html``.

Every path is a Hadoop path (local, HDFS, S3A, ...), written by Spark or
through Hadoop's FileSystem from the driver, so the job runs unchanged on a
cluster.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from kgroups.spark.analytics.arrow_map import map_sorted
from kgroups.spark.analytics.burrow import GROUP_STATUS, SEVERITY, STATUS_SCHEMA, evaluate_sorted
from kgroups.spark.analytics.consumer_epochs import EPOCHS_SCHEMA, consumer_epochs, share_epochs
from kgroups.spark.analytics.lag import commit_lag, log_end_as_of, record_index, ticks
from kgroups.spark.analytics.rebalances import rebalance_history
from kgroups.spark.analytics.report import EpochMark, GroupReport, render_report
from kgroups.spark.analytics.session import log_records, size_shuffles
from kgroups.spark.analytics.share_deliveries import share_state
from kgroups.spark.analytics.share_report import (
    ShareGroupReport,
    SharePartitionNow,
    render_share_groups,
)
from kgroups.spark.analytics.share_state_log import STATE_LOG_SCHEMA
from kgroups.spark.analytics.tables import (
    commits_table,
    decoded_offsets_log,
    decoded_share_state_log,
    generations_table,
)
from kgroups.spark.cluster_calls import ClusterCalls
from kgroups.spark.offset_spec import LATEST
from kgroups.spark.options import TopicSelection

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

__all__ = [
    "DRIVER_READ_RECORDS",
    "STEPS",
    "AnalyticsConfig",
    "Progress",
    "run_analytics",
    "write_text",
]

OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"
STEPS = 8
# Up to this many records, the offsets log and the data topics' index are read and
# decoded on the driver, and the analyses' Python steps run there too: no Python
# process is started beside the driver. Decoding takes about 20 CPU µs a record, so
# 100 000 records cost the driver about 2 s on one core, less than the data source's
# start-up processes (about 3 s) and its workers would, and their rows (some 30 MB
# as Arrow) pass to the JVM at once; above it the executors' parallel read wins.
DRIVER_READ_RECORDS = 100_000
_COMMIT_KINDS = ("offset_commit", "offset_deleted")
_TICKS_PER_HISTORY = 120
_POINTS_PER_SHARE_HISTORY = 240  # start offsets drawn per share partition, at most


@dataclass(frozen=True)
class AnalyticsConfig:
    bootstrap: str
    output: str
    offsets_topic: str = OFFSETS_TOPIC
    share_state_topic: str = SHARE_STATE_TOPIC
    groups: str | None = None
    """A regular expression the whole group id must match."""
    window: int = 10
    interval_ms: int | None = None
    now_ms: int | None = None
    security_keys: dict[str, str] = field(default_factory=dict, repr=False)  # holds a password
    """security.protocol, ssl.*, sasl.* (--command-config), for every connection."""
    driver_read_records: int = DRIVER_READ_RECORDS
    """Logs of at most this many records are read and analysed on the driver (0: never)."""

    @property
    def kafka_options(self) -> dict[str, str]:
        """The security keys as the data source's ``kafka.`` options."""
        return {f"kafka.{key}": value for key, value in self.security_keys.items()}


@dataclass
class Progress:
    """Step lines on stderr, with the time each step took."""

    steps: int
    write: Callable[[str], Any] = field(default=lambda line: print(line, file=sys.stderr))
    _step: int = 0
    _started: float = field(default_factory=time.monotonic)

    def step(self, message: str) -> None:
        self._step += 1
        self._started = time.monotonic()
        self.write(f"[analytics {self._step}/{self.steps}] {message} ...")

    def done(self, message: str) -> None:
        took = time.monotonic() - self._started
        self.write(f"[analytics {self._step}/{self.steps}] {message} ({took:.1f} s)")


def write_text(spark: SparkSession, path: str, text: str) -> None:
    """Write a file to any Hadoop path from the driver."""
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    target = jvm.org.apache.hadoop.fs.Path(path)
    stream = target.getFileSystem(conf).create(target, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def _save(df: DataFrame, path: str) -> None:
    df.write.mode("overwrite").parquet(path)


def run_analytics(
    spark: SparkSession, config: AnalyticsConfig, progress: Progress | None = None
) -> dict[str, Any]:
    """Run every step; returns the figures of the summary line."""
    progress = progress or Progress(steps=STEPS)
    out = config.output.rstrip("/")
    sc = spark.sparkContext

    progress.step(f"reading {config.offsets_topic} from {config.bootstrap}")
    sc.setJobDescription("kgroups analytics: decode the offsets topic")
    with ClusterCalls(config.bootstrap, security_keys=config.security_keys) as calls:
        topic_names = calls.topic_names()
    # A small log is read, decoded and analysed on the driver (DRIVER_READ_RECORDS).
    log_size = (
        log_records(config.bootstrap, config.offsets_topic, config.security_keys)
        if config.driver_read_records > 0
        else None
    )
    small = log_size is not None and log_size <= config.driver_read_records
    decoded = decoded_offsets_log(
        spark,
        config.bootstrap,
        config.offsets_topic,
        group_pattern=config.groups,
        extra_options=config.kafka_options,
        topic_names=topic_names,
        on_driver=small,
    )
    decoded = _kept(decoded, small)
    # One aggregation gives the step lines' counts, the committed-to topics and the
    # first commit: on a small log each Spark job costs more than its data.
    overview = (
        decoded.groupBy("kind", "topic")
        .agg(F.count("*").alias("n"), F.min("commit_ms").alias("first_ms"))
        .collect()
    )
    kinds: dict[str, int] = {}
    for row in overview:
        kinds[row.kind] = kinds.get(row.kind, 0) + row.n
    commit_rows = [r for r in overview if r.kind in _COMMIT_KINDS and r.topic is not None]
    shuffle_partitions = size_shuffles(spark, sum(kinds.values()))
    progress.done(
        f"{sum(kinds.values())} records: "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        + f"; shuffle partitions: {shuffle_partitions}"
    )

    progress.step("writing commits and generations")
    commits = commits_table(decoded)
    generations = _kept(generations_table(decoded), small)
    commits = _saved(spark, commits, f"{out}/commits", small)
    _save(generations, f"{out}/generations")
    progress.done("tables commits, generations written")

    progress.step("reading the data topics' offset -> timestamp index")
    sc.setJobDescription("kgroups analytics: data topics' index")
    topics = sorted({r.topic for r in commit_rows})
    with ClusterCalls(config.bootstrap, security_keys=config.security_keys) as calls:
        existing = sorted({t for t, _ in calls.partitions(TopicSelection(pattern=".*"))})
    present = [t for t in topics if t in existing]
    index = record_index(
        spark, config.bootstrap, present, config.kafka_options, config.driver_read_records
    ).cache()
    records = index.count()
    gone = sorted(set(topics) - set(present))
    progress.done(
        f"{records} records of {len(present)} topics"
        + (f" (deleted since: {', '.join(gone)})" if gone else "")
    )

    progress.step("computing lag per commit")
    sc.setJobDescription("kgroups analytics: lag")
    lag = commit_lag(commits, index)
    lag = lag.cache() if small else lag  # a small log's lag: one job, not one per use
    lag = _saved(spark, lag, f"{out}/lag", small)
    progress.done("table lag written")

    progress.step("evaluating Burrow's status rules")
    sc.setJobDescription("kgroups analytics: status")
    first_ms = min((r.first_ms for r in commit_rows if r.first_ms is not None), default=None)
    now_ms = config.now_ms if config.now_ms is not None else int(time.time() * 1000)
    interval_ms = config.interval_ms or max(
        1000, ((now_ms - (first_ms or now_ms)) // _TICKS_PER_HISTORY) or 1000
    )
    moments = log_end_as_of(index, ticks(commits.filter(~F.col("deleted")), now_ms, interval_ms))
    events = lag.select(
        "group",
        "topic",
        "partition",
        F.col("commit_ms").alias("t_ms"),
        F.lit(0).alias("kind"),
        F.col("committed_offset").alias("offset"),
        "lag_offsets",
        F.lit(None).cast("long").alias("log_end"),
    ).unionByName(
        moments.select(
            "group",
            "topic",
            "partition",
            "t_ms",
            F.lit(1).alias("kind"),
            F.lit(None).cast("long").alias("offset"),
            F.lit(None).cast("long").alias("lag_offsets"),
            "log_end",
        )
    )
    window = config.window
    status = _kept(
        map_sorted(
            events,
            lambda batches: evaluate_sorted(batches, window),
            STATUS_SCHEMA,
            keys=["group", "topic", "partition"],
            then=["t_ms", "kind"],
            on_driver=small,
        ).withColumn("time", F.timestamp_millis("t_ms")),
        small,
    )
    _save(status, f"{out}/partition_status")
    severity = F.create_map(*[x for s, n in SEVERITY.items() for x in (F.lit(n), F.lit(s))])
    group_map = F.create_map(*[x for s, g in GROUP_STATUS.items() for x in (F.lit(s), F.lit(g))])
    rank = F.create_map(*[x for s, n in SEVERITY.items() for x in (F.lit(s), F.lit(n))])
    group_status = (
        status.groupBy("group", "t_ms")
        .agg(
            F.max(rank[F.col("status")]).alias("_worst"),
            F.sum("lag_offsets").alias("total_lag"),
            F.count("*").alias("partitions"),
        )
        .withColumn("worst_partition_status", severity[F.col("_worst")])
        .withColumn("status", group_map[F.col("worst_partition_status")])
        .withColumn("time", F.timestamp_millis("t_ms"))
        .drop("_worst")
        .cache()
    )
    _save(group_status, f"{out}/group_status")
    group_rows = _sorted(
        group_status.select("group", "t_ms", "total_lag", "partitions", "status").collect(),
        "group",
        "t_ms",
    )
    counts = Counter(r.status for r in group_rows if r.t_ms == now_ms)
    evaluations = sum(r.partitions for r in group_rows)
    progress.done(
        f"{evaluations} partition evaluations every {interval_ms / 1000:g} s; groups now: "
        + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none")
    )

    progress.step("building the rebalance history")
    sc.setJobDescription("kgroups analytics: rebalances")
    rebalances = rebalance_history(generations, commits, on_driver=small).cache()
    _save(rebalances, f"{out}/rebalances")
    epochs = _kept(consumer_epochs(decoded, on_driver=small), small)
    _save(epochs, f"{out}/epochs")
    history = _sorted(
        rebalances.select(
            "group", "record_ms", "generation", "cause", "member_count", "not_stable_ms"
        ).collect(),
        "group",
        "record_ms",
    )
    moves = _sorted(
        epochs.select(
            "group",
            "offsets_offset",
            "record_ms",
            "event",
            "epoch",
            "cause",
            "member_count",
            "reconciled_ms",
        ).collect(),
        "group",
        "offsets_offset",
    )
    progress.done(
        f"{len(history)} generations, "
        f"{sum(1 for m in moves if m.event == 'group_epoch')} consumer group epochs"
    )

    progress.step(f"reading {config.share_state_topic}: share partitions' delivery state")
    sc.setJobDescription("kgroups analytics: share groups")
    state_size = log_records(config.bootstrap, config.share_state_topic, config.security_keys)
    small_state = state_size is not None and state_size <= config.driver_read_records
    share_records = any(kind.startswith("share_") for kind in kinds)
    if share_records:
        share_moves = _kept(share_epochs(decoded, on_driver=small), small)
    else:  # no share group: nothing to sort
        share_moves = spark.createDataFrame([], EPOCHS_SCHEMA).withColumn(
            "time", F.timestamp_millis("record_ms")
        )
    _save(share_moves, f"{out}/share_epochs")
    if state_size:
        state_log = decoded_share_state_log(
            spark,
            config.bootstrap,
            config.share_state_topic,
            group_pattern=config.groups,
            extra_options=config.kafka_options,
            topic_names=topic_names,
            on_driver=small_state,
        )
    else:  # no share partition has stored state: the topic is not there
        state_log = spark.createDataFrame([], STATE_LOG_SCHEMA)
        small_state = True
    state = _kept(share_state(state_log, on_driver=small_state), small_state)
    _save(state, f"{out}/share_state")
    has_share = share_records or bool(state_size)
    share_reports = _share_reports(config, state, share_moves) if has_share else []
    progress.done(
        f"{state_size or 0} state records of "
        f"{sum(len(r.partitions) for r in share_reports)} share partition(s), "
        f"{len(share_reports)} share group(s)"
    )

    progress.step("writing report.html")
    reports = _group_reports(group_rows, status, history, moves, lag, now_ms)
    write_text(
        spark,
        f"{out}/report.html",
        render_report(
            reports,
            now_ms,
            f"Consumer groups of {config.bootstrap}",
            appendix=render_share_groups(share_reports),
        ),
    )
    progress.done(
        f"{out}/report.html ({len(reports)} groups"
        + (f", {len(share_reports)} share groups)" if share_reports else ")")
    )
    for df in (
        decoded,
        commits,
        generations,
        index,
        lag,
        status,
        group_status,
        rebalances,
        epochs,
        share_moves,
        state,
    ):
        df.unpersist()
    return {
        "records": sum(kinds.values()),
        "commits": kinds.get("offset_commit", 0),
        "groups": len(reports),
        "status": {r.group: r.status for r in reports},
        "share_groups": len(share_reports),
    }


def _share_reports(
    config: AnalyticsConfig, state: DataFrame, moves: DataFrame
) -> list[ShareGroupReport]:
    """Each share group's part of the report: its share partitions' last stored
    state (with their log end now), their start offsets over time (at most
    _POINTS_PER_SHARE_HISTORY a partition) and the group's epochs."""
    keys = ["group", "topic", "partition"]
    stored = state.filter(F.col("event") != "deleted")
    span = stored.agg(F.min("record_ms").alias("first"), F.max("record_ms").alias("last")).first()
    reports: dict[str, ShareGroupReport] = {}
    if span is not None and span.first is not None:
        bucket_ms = max(1000, (span.last - span.first) // _POINTS_PER_SHARE_HISTORY)
        points = (
            stored.groupBy(*keys, F.floor(F.col("record_ms") / bucket_ms).alias("_bucket"))
            .agg(F.max_by(F.struct("record_ms", "start_offset"), "state_offset").alias("p"))
            .select(*keys, "p.record_ms", "p.start_offset")
            .collect()
        )
        for row in _sorted(points, "group", "topic", "partition", "record_ms"):
            report = reports.setdefault(row.group, ShareGroupReport(row.group))
            series = report.starts.setdefault((row.topic, row.partition), [])
            series.append((row.record_ms, row.start_offset))
    last = (
        state.groupBy(*keys)
        .agg(F.max_by(F.struct(*state.columns), "state_offset").alias("last"))
        .select("last.*")
        .filter(F.col("event") != "deleted")
        .collect()
    )
    ends: dict[tuple[str, int], int] = {}
    if last:
        with ClusterCalls(config.bootstrap, security_keys=config.security_keys) as calls:
            existing = set(calls.partitions(TopicSelection(pattern=".*")))
            wanted = {(r.topic, r.partition) for r in last} & existing
            ends = dict(calls.offsets({tp: LATEST for tp in wanted})) if wanted else {}
    for row in _sorted(last, "group", "topic", "partition"):
        reports.setdefault(row.group, ShareGroupReport(row.group)).partitions.append(
            SharePartitionNow(
                topic=row.topic,
                partition=row.partition,
                start_offset=row.start_offset,
                in_flight=row.in_flight_end - row.start_offset,
                delivered_not_done=row.delivered_not_done,
                acknowledged=row.acknowledged,
                archived=row.archived,
                completed_total=row.completed_total,
                redelivered_seen=row.redelivered_seen,
                archived_seen=row.archived_seen,
                log_end=ends.get((row.topic, row.partition)),
            )
        )
    marks = moves.select(
        "group", "offsets_offset", "record_ms", "event", "epoch", "cause", "member_count"
    ).collect()
    for row in _sorted(marks, "group", "offsets_offset"):
        reports.setdefault(row.group, ShareGroupReport(row.group)).epochs.append(
            EpochMark(row.record_ms, row.event, row.epoch, row.cause, row.member_count)
        )
    return [reports[g] for g in sorted(reports)]


def _kept(df: DataFrame, small: bool) -> DataFrame:
    """``df`` cached, unless it is a table made on the driver (or a projection of
    one): that is in memory already, and Spark answers its filters and projections
    without a job, where a cached table costs one each time."""
    return df if small else df.cache()


def _saved(spark: SparkSession, df: DataFrame, path: str, small: bool) -> DataFrame:
    """Write the table ``df`` to ``path``; the table for the steps that read it again:
    on a big log, read back from its Parquet files, which costs the JVM less than
    keeping every row in an in-memory cache (a copy of each column of each row) and
    reads only the columns each step needs; on a small log, ``df`` itself."""
    _save(df, path)
    return df if small else spark.read.parquet(path)


def _sorted(rows: list[Row], *columns: str) -> list[Row]:
    """``rows`` in Spark's ascending order of ``columns`` (nulls first): a small result
    sorted here costs no sort job."""
    return sorted(rows, key=lambda r: [(r[c] is not None, r[c]) for c in columns])


def _group_reports(
    group_rows: list[Row],
    status: DataFrame,
    history: list[Row],
    moves: list[Row],
    lag: DataFrame,
    now_ms: int,
) -> list[GroupReport]:
    reports: dict[str, GroupReport] = {}
    for row in group_rows:
        report = reports.setdefault(row.group, GroupReport(row.group, "OK", 0))
        report.lag_series.append((row.t_ms, int(row.total_lag or 0), row.status))
        if row.t_ms == now_ms:
            report.status, report.total_lag = row.status, int(row.total_lag or 0)
    now = status.filter(F.col("t_ms") == now_ms).collect()
    for row in _sorted(now, "group", "topic", "partition"):
        reports.setdefault(row.group, GroupReport(row.group, "OK", 0)).partitions.append(
            (
                row.topic,
                row.partition,
                row.committed_offset,
                row.log_end,
                row.lag_offsets,
                row.status,
            )
        )
    for row in history:
        reports.setdefault(row.group, GroupReport(row.group, "OK", 0)).rebalances.append(
            (row.record_ms, row.generation, row.cause, row.member_count, row.not_stable_ms)
        )
    for row in moves:
        reports.setdefault(row.group, GroupReport(row.group, "OK", 0)).epochs.append(
            EpochMark(
                row.record_ms, row.event, row.epoch, row.cause, row.member_count, row.reconciled_ms
            )
        )
    for row in lag.groupBy("group").agg(F.max("lag_seconds").alias("worst")).collect():
        if row.group in reports:
            reports[row.group].max_lag_seconds = row.worst
    return [reports[g] for g in sorted(reports)]
