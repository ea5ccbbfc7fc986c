"""``kgroups analytics --follow``: a live lag and status table, kept up to date as
commits arrive.

A Structured Streaming query reads the offsets topic through the kgroups data
source (its position lives in the query's checkpoint) and hands each
micro-batch's commits to the driver, which keeps each partition's Burrow window
(the last ``window`` commits) and re-evaluates every partition against the log
end offsets of now. The live table is written to ``OUTPUT/live_status``
(Parquet, replaced each time), registered as the temporary view
``kgroups_live_status`` and summarised on stderr. It is also refreshed between
micro-batches, so a group that stops committing turns STOP without new records.

The windows (follow_state.py: one per partition the cluster still holds, ended
by the offsets topic's tombstones) are saved to ``OUTPUT/follow_state.json``
after each micro-batch, with the last offsets-topic offset applied per
partition, so a restarted follow neither loses them nor applies a replayed
micro-batch twice.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from kgroups.spark.analytics.burrow import GROUP_STATUS, SEVERITY, Commit, partition_status
from kgroups.spark.analytics.follow_state import FollowState, Key
from kgroups.spark.analytics.job import AnalyticsConfig, write_text
from kgroups.spark.analytics.tables import decoded_offsets_log
from kgroups.spark.cluster_calls import ClusterCalls
from kgroups.spark.offset_spec import LATEST
from kgroups.spark.options import TopicSelection

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LiveStatus", "follow"]

LIVE_SCHEMA = (
    "group string, topic string, partition int, committed_offset long, log_end long,"
    " lag_offsets long, status string, group_status string, last_commit_ms long, evaluated_ms long"
)


class LiveStatus:
    """The driver's windows per (group, topic, partition) and the live table."""

    def __init__(self, spark: SparkSession, config: AnalyticsConfig, say: Callable[[str], Any]):
        self.spark = spark
        self.config = config
        self.say = say
        self.calls = ClusterCalls(config.bootstrap, security_keys=config.security_keys)
        # Micro-batches arrive on a py4j callback thread while the main thread
        # refreshes between them: one at a time, or both write live_status at once.
        self.lock = threading.RLock()
        self.state_path = f"{config.output.rstrip('/')}/follow_state.json"
        # Each partition's last ``window`` log ends, one per refresh: Burrow's
        # broker offsets (recent by nature, so not kept across restarts).
        self.log_ends: dict[tuple[str, int], deque[int]] = {}
        text = _read_text(self.spark, self.state_path)
        self.state = (
            FollowState(config.window)
            if text is None
            else FollowState.from_json(json.loads(text), config.window)
        )

    @property
    def windows(self) -> dict[Key, deque[Commit]]:
        return self.state.windows

    def add_batch(self, batch: DataFrame, batch_id: int) -> None:
        with self.lock:
            self._add_batch(batch, batch_id)

    def _add_batch(self, batch: DataFrame, batch_id: int) -> None:
        rows = (
            batch.filter(F.col("kind").isin("offset_commit", "offset_deleted", "group_deleted"))
            .select(
                "kind",
                "group",
                "topic",
                "partition",
                "committed_offset",
                "commit_ms",
                "offsets_partition",
                "offsets_offset",
            )
            .orderBy("offsets_partition", "offsets_offset")
            .collect()
        )
        fresh = self.state.fresh(rows)
        # Only each partition's last `window` commits since its last tombstone count.
        kept: dict[Key, list[Any]] = {}
        for r in fresh:
            key = (r.group, r.topic, r.partition)
            if r.kind == "offset_commit":
                kept.setdefault(key, []).append(r)
            elif r.kind == "offset_deleted":
                kept.pop(key, None)
                self.state.delete_offset(key)
            else:
                kept = {k: v for k, v in kept.items() if k[0] != r.group}
                self.state.delete_group(r.group)
        kept = {key: commits[-self.config.window :] for key, commits in kept.items()}
        ends = self._log_ends_at(
            {(r.topic, r.partition, r.commit_ms) for commits in kept.values() for r in commits}
        )
        for key, commits in kept.items():
            for r in commits:
                end = ends.get((r.topic, r.partition, r.commit_ms))
                lag = None if end is None else max(0, end - r.committed_offset)
                self.state.add(key, Commit(r.committed_offset, lag, r.commit_ms))
        write_text(self.spark, self.state_path, json.dumps(self.state.to_json()))
        new = sum(1 for r in fresh if r.kind == "offset_commit")
        self.refresh(f"micro-batch {batch_id}: {new} new commits")

    def _log_ends(self, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
        existing = set(self.calls.partitions(TopicSelection(pattern=".*")))
        return self.calls.offsets({tp: LATEST for tp in partitions if tp in existing})

    def _log_ends_at(self, moments: set[tuple[str, int, int]]) -> dict[tuple[str, int, int], int]:
        """Each partition's log end as of each time: the first offset whose record is
        later than it (ListOffsets by time), one request per round of distinct times."""
        existing = set(self.calls.partitions(TopicSelection(pattern=".*")))
        pending: dict[tuple[str, int], list[int]] = {}
        for topic, partition, t in sorted(moments):
            if (topic, partition) in existing:
                pending.setdefault((topic, partition), []).append(t)
        out: dict[tuple[str, int, int], int] = {}
        while pending:
            found = self.calls.offsets({tp: times[0] + 1 for tp, times in pending.items()})
            for tp, offset in found.items():
                out[(*tp, pending[tp].pop(0))] = offset
            pending = {tp: times for tp, times in pending.items() if times}
        return out

    def refresh(self, why: str) -> None:
        with self.lock:
            self._refresh(why)

    def _refresh(self, why: str) -> None:
        now_ms = int(time.time() * 1000)
        ends = self._log_ends({(t, p) for _, t, p in self.windows})
        for tp, log_end in ends.items():
            self.log_ends.setdefault(tp, deque(maxlen=self.config.window)).append(log_end)
        rows: list[list[Any]] = []
        for (group, topic, partition), window in sorted(self.windows.items()):
            last = window[-1]
            end = ends.get((topic, partition))
            current = (last.lag or 0) if end is None else max(0, end - last.offset)
            rows.append(
                [
                    group,
                    topic,
                    partition,
                    last.offset,
                    end,
                    current,
                    partition_status(
                        window, current, now_ms, self.log_ends.get((topic, partition), ())
                    ),
                    None,
                    last.t_ms,
                    now_ms,
                ]
            )
        worst: dict[str, str] = {}
        for row in rows:
            if SEVERITY[row[6]] > SEVERITY[worst.get(row[0], "OK")]:
                worst[row[0]] = row[6]
        for row in rows:
            row[7] = GROUP_STATUS[worst.get(row[0], "OK")]
        table = self.spark.createDataFrame([tuple(r) for r in rows], LIVE_SCHEMA)
        table.write.mode("overwrite").parquet(f"{self.config.output.rstrip('/')}/live_status")
        table.createOrReplaceTempView("kgroups_live_status")
        groups = sorted({(r[0], r[7]) for r in rows})
        lag = {g: sum(r[5] for r in rows if r[0] == g) for g, _ in groups}
        self.say(
            f"[follow] {why}; "
            + (", ".join(f"{g}: {s} lag {lag[g]}" for g, s in groups) or "no groups yet")
        )


def follow(
    spark: SparkSession,
    config: AnalyticsConfig,
    *,
    checkpoint: str | None = None,
    once: bool = False,
    trigger_seconds: float = 10.0,
    say: Callable[[str], Any] = lambda line: print(line, file=sys.stderr),
) -> None:
    """Run until stopped (Ctrl-C), or with ``once`` until what is there now is read."""
    live = LiveStatus(spark, config, say)
    if live.windows:
        live.refresh("state restored")
    stream = decoded_offsets_log(
        spark,
        config.bootstrap,
        config.offsets_topic,
        group_pattern=config.groups,
        streaming=True,
        extra_options={**config.kafka_options, "maxOffsetsPerTrigger": "200000"},
    )
    writer = stream.writeStream.foreachBatch(live.add_batch).option(
        "checkpointLocation", checkpoint or f"{config.output.rstrip('/')}/follow_checkpoint"
    )
    query = (
        writer.trigger(availableNow=True)
        if once
        else writer.trigger(processingTime=f"{trigger_seconds} seconds")
    ).start()
    say(f"[follow] reading {config.offsets_topic} from {config.bootstrap}; Ctrl-C stops")
    try:
        while not query.awaitTermination(max(1, round(trigger_seconds))):
            live.refresh("between micro-batches")
    except KeyboardInterrupt:
        say("[follow] stopping")
    finally:
        query.stop()
        live.calls.close()


def _read_text(spark: SparkSession, path: str) -> str | None:
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    target = jvm.org.apache.hadoop.fs.Path(path)
    fs = target.getFileSystem(conf)
    if not fs.exists(target):
        return None
    stream = fs.open(target)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
        return "\n".join(iter(reader.readLine, None))
    finally:
        stream.close()
