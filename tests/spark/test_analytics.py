"""`kgroups analytics` on a recorded scenario: an offsets log written by the test in
Kafka's record formats (every key and value version), beside a data topic whose
record timestamps are known, so every lag figure, status and cause is exact."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import create_topic

from kgroups.assignors.protocol import (
    Assignment,
    Subscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from kgroups.coordinator.records import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

from broker_thread import BrokerThread

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
NOW = T0 + 100_000
SECOND = 1000


def commit_at(j: int) -> int:
    return T0 + 10 * SECOND * j + 500


# Committed offsets per group and commit index j (commit at commit_at(j)); the data
# topic gets one record per second per partition, so the log end at commit j is 10j+1.
SCENARIO: dict[str, dict[int, int]] = {
    "steady": {j: 10 * j + 1 for j in range(10)},  # never behind: OK
    "slow": {j: 5 * j + 1 for j in range(1, 10)},  # moves, lag grows: WARN
    "stalled": {j: 3 for j in range(1, 10)},  # never moves: STALL
    "recovering": {j: 5 * j + 1 if j <= 5 else 10 * j + 1 for j in range(1, 10)},  # WARN, OK
    "stopped": {j: 10 * j - 4 for j in range(1, 5)},  # stops committing: STOP
    "quit": {j: 10 * j + 1 for j in range(1, 5)},  # caught up, then stops committing: STOP
    # goes back and has not come back to where it was: REWIND (Burrow forgives a rewind
    # a later commit of the window catches up again)
    "rewound": {j: 2 if j == 9 else 5 * j + 1 for j in range(1, 10)},
}
EXPECTED_NOW = {
    "steady": ("OK", "OK"),
    "slow": ("WARN", "WARN"),
    "stalled": ("STALL", "ERR"),
    "recovering": ("OK", "OK"),
    "stopped": ("STOP", "ERR"),
    "quit": ("STOP", "ERR"),
    "rewound": ("REWIND", "ERR"),
}


def _member(member_id: str, partition: int, instance: str | None = None) -> MemberMetadataValue:
    return MemberMetadataValue(
        member_id=member_id,
        group_instance_id=instance,
        client_id=member_id.split("-")[0],
        client_host="/10.0.0.1",
        rebalance_timeout=30_000,
        session_timeout=10_000,
        subscription=encode_subscription(Subscription(["orders"])),
        assignment=encode_assignment(Assignment([TopicPartition("orders", partition)])),
    )


def _generation(generation: int, members: list[MemberMetadataValue], t: int) -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type="consumer",
        generation=generation,
        protocol="range" if members else None,
        leader=members[0].member_id if members else None,
        current_state_timestamp=t - 200,
        members=tuple(members),
    )


def _offsets_log() -> list[tuple[int, bytes, bytes | None]]:
    """(timestamp, key, value) records of the recorded offsets topic, in time order."""
    records: list[tuple[int, bytes, bytes | None]] = []
    version = 0
    for group, commits in SCENARIO.items():
        for j, offset in commits.items():
            for partition in (0, 1):
                key = encode_offset_commit_key(group, "orders", partition)
                if version % 2 == 0:
                    key = b"\x00\x00" + key[2:]  # key v0: same layout as v1
                expire = commit_at(j) + 86_400_000 if version % 5 == 1 else -1
                value = OffsetCommitValue(offset, "", commit_at(j), 7, expire)
                records.append((commit_at(j), key, encode_offset_commit_value(value, version % 5)))
                version += 1
    a, b = _member("a-1", 0), _member("b-1", 1)
    c, c2 = _member("c-1", 1, "s1"), _member("c-2", 1, "s1")
    generations = [
        (1, [a], 1),
        (2, [a, b], 5),
        # b gone 12 s after its last sign of life: its session may have run out, or it
        # sent LeaveGroup after idling; the log cannot tell which.
        (3, [a], 20),
        (4, [a, c], 30),
        (4, [a, c2], 40),  # the static member s1 came back under a new member id
        (5, [c2], 50),  # a committed 1 s before, its session still running: it left
        (6, [], 60),
    ]
    for i, (generation, members, at) in enumerate(generations):
        stored = _generation(generation, members, T0 + at * SECOND)
        value = encode_group_metadata_value(stored, i % 5)
        records.append((T0 + at * SECOND, encode_group_metadata_key("rebalancing"), value))
    for partition, at in ((1, 8), (0, 49), (1, 59)):
        value = encode_offset_commit_value(OffsetCommitValue(at, "", T0 + at * SECOND))
        key = encode_offset_commit_key("rebalancing", "orders", partition)
        records.append((T0 + at * SECOND, key, value))
    records.append((T0 + 95 * SECOND, encode_offset_commit_key("gone", "orders", 0), None))
    records.append((T0 + 96 * SECOND, b"\x00\x09unknown", b"\x00\x00"))
    return sorted(records, key=lambda r: r[0])


def _record_scenario(bootstrap: str) -> None:
    from confluent_kafka import Producer

    create_topic(bootstrap, "orders", 2)
    create_topic(bootstrap, "recorded-offsets", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(100):
        for partition in (0, 1):
            producer.produce("orders", value=b"o", partition=partition, timestamp=T0 + i * SECOND)
    for t, key, value in _offsets_log():
        producer.produce("recorded-offsets", key=key, value=value, partition=0, timestamp=t)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def recorded(spark_broker: BrokerThread) -> str:
    _record_scenario(spark_broker.bootstrap)
    return spark_broker.bootstrap


def test_analytics_on_a_recorded_scenario(
    spark: Any, spark_broker: BrokerThread, recorded: str, tmp_path: Path
) -> None:
    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    lines: list[str] = []
    out = str(tmp_path / "analytics")
    summary = run_analytics(
        spark,
        AnalyticsConfig(
            bootstrap=spark_broker.bootstrap,
            output=out,
            offsets_topic="recorded-offsets",
            # The last 10 ticks' log ends (Burrow's broker offsets) reach 50 s back:
            # none at or below the stopped groups' last commits, 60 s ago.
            interval_ms=5 * SECOND,
            now_ms=NOW,
        ),
        Progress(steps=8, write=lines.append),
    )
    assert [line.split("]")[0] for line in lines[::2]] == [f"[analytics {i}/8" for i in range(1, 9)]

    commits = spark.read.parquet(f"{out}/commits")
    assert {r.value_version for r in commits.select("value_version").distinct().collect()} == {
        None,
        0,
        1,
        2,
        3,
        4,
    }
    assert {r.key_version for r in commits.select("key_version").distinct().collect()} == {0, 1}
    assert commits.filter("deleted").count() == 1
    assert summary["records"] == len(_offsets_log())

    lag = spark.read.parquet(f"{out}/lag").filter("group = 'slow'").collect()
    assert sorted((r.partition, r.commit_ms, r.lag_offsets, r.lag_seconds) for r in lag) == [
        (p, commit_at(j), 5 * j, 5 * j - 0.5) for p in (0, 1) for j in range(1, 10)
    ]
    steady = spark.read.parquet(f"{out}/lag").filter("group = 'steady'").collect()
    assert {(r.lag_offsets, r.lag_seconds) for r in steady} == {(0, 0.0)}

    status = spark.read.parquet(f"{out}/partition_status").filter(f"t_ms = {NOW}").collect()
    now = {(r.group, r.partition): r.status for r in status}
    groups = spark.read.parquet(f"{out}/group_status")
    current = {r.group: r.status for r in groups.filter(f"t_ms = {NOW}").collect()}
    for group, (partition_status, group_status) in EXPECTED_NOW.items():
        assert now[(group, 0)] == now[(group, 1)] == partition_status, group
        assert current[group] == group_status, group
    lag_now = {r.group: r.total_lag for r in groups.filter(f"t_ms = {NOW}").collect()}
    assert lag_now["slow"] == 2 * (100 - 46)
    history = [r.status for r in groups.filter("group = 'recovering'").orderBy("t_ms").collect()]
    assert "WARN" in history and history[-1] == "OK"

    rebalances = (
        spark.read.parquet(f"{out}/rebalances").filter("group = 'rebalancing'").orderBy("record_ms")
    ).collect()
    assert [(r.generation, r.cause) for r in rebalances] == [
        (1, "group created; joined: a-1"),
        (2, "joined: b-1"),
        (3, "left or expired: b-1"),
        (4, "joined: c-1 (s1)"),
        (4, "static member replaced: s1: c-1 -> c-2"),
        (5, "left: a-1"),
        (6, "left: c-2"),  # a v0 value, which has no group instance ids
    ]
    assert rebalances[2].left_or_expired == ["b-1"] and rebalances[2].left == []
    assert rebalances[5].left == ["a-1"] and rebalances[5].left_or_expired == []
    assert rebalances[2].not_stable_ms == 20 * SECOND - (8 * SECOND + 10 * SECOND)
    assert rebalances[-1].emptied

    report = (tmp_path / "analytics" / "report.html").read_text()
    assert report.count("<svg") == len(summary["status"])
    assert "left or expired: b-1" in report and "session expired" not in report
    assert "http" not in report.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_a_small_log_read_on_the_driver_gives_the_executors_tables(
    spark: Any, recorded: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The small-log path (read, decode and analyse on the driver) and the executors'
    path write the same tables and the same report from the same log."""
    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics
    from kgroups.spark.analytics.tables import decoded_offsets_log

    for on_driver in (False, True):
        decoded_offsets_log(spark, recorded, "recorded-offsets", on_driver=on_driver).explain()
        assert ("MapInArrow" in capsys.readouterr().out) != on_driver

    outputs = {}
    for name, driver_records in (("executors", 0), ("driver", 10_000)):
        outputs[name] = out = str(tmp_path / name)
        run_analytics(
            spark,
            AnalyticsConfig(
                bootstrap=recorded,
                output=out,
                offsets_topic="recorded-offsets",
                interval_ms=10 * SECOND,
                now_ms=NOW,
                driver_read_records=driver_records,
            ),
            Progress(steps=8, write=lambda line: None),
        )
    tables = ("commits", "generations", "lag", "partition_status", "group_status")
    for table in (*tables, "rebalances", "epochs"):
        executors = spark.read.parquet(f"{outputs['executors']}/{table}")
        driver = spark.read.parquet(f"{outputs['driver']}/{table}")
        assert driver.schema == executors.schema, table
        assert sorted(map(repr, driver.collect())) == sorted(map(repr, executors.collect())), table
    assert spark.read.parquet(f"{outputs['driver']}/partition_status").count() > 0
    report = {name: (Path(out) / "report.html").read_text() for name, out in outputs.items()}
    assert report["driver"] == report["executors"]


def test_analytics_on_real_groups(spark: Any, spark_broker: BrokerThread, tmp_path: Path) -> None:
    """The same job on the broker's own __consumer_offsets, written by real clients."""
    from confluent_kafka import Consumer

    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "live-orders", 2)
    from spark_helpers import produce

    produce(bootstrap, "live-orders", [(None, b"x", i % 2) for i in range(200)])

    def member(name: str) -> Any:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "live",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 100,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 200,
            }
        )
        consumer.subscribe(["live-orders"])
        return consumer

    def poll_until(consumers: list[Any], assigned: int) -> None:
        for _ in range(100):
            for c in consumers:
                c.poll(0.05)
            if sum(len(c.assignment()) for c in consumers) == 2 and all(
                len(c.assignment()) == assigned for c in consumers
            ):
                return
        raise AssertionError("the group did not settle")

    first = member("first")
    poll_until([first], 2)
    second = member("second")
    poll_until([first, second], 1)
    second.close()
    poll_until([first], 2)
    for _ in range(20):  # read the rest; close() commits where it got
        first.poll(0.05)
    first.close()

    out = str(tmp_path / "real")
    run_analytics(
        spark,
        AnalyticsConfig(bootstrap=bootstrap, output=out, groups="live"),
        Progress(steps=8, write=lambda line: None),
    )
    causes = [
        r.cause.split(":")[0]
        for r in spark.read.parquet(f"{out}/rebalances").orderBy("record_ms").collect()
    ]
    assert causes == ["group created; joined", "joined", "left", "left"]
    # Every record was written before the group started: the log end is 100 throughout.
    lag = spark.read.parquet(f"{out}/lag").collect()
    assert lag and {r.log_end for r in lag} == {100}
    assert all(r.lag_offsets == 100 - r.committed_offset for r in lag)
    assert all(r.lag_seconds > 0 for r in lag if r.lag_offsets > 0)


def test_analytics_on_a_real_consumer_group(
    spark: Any, spark_broker: BrokerThread, tmp_path: Path
) -> None:
    """A KIP-848 group (confluent-kafka, group.protocol=consumer): its records are
    decoded, its epochs drawn on the timeline, and its lag computed as a classic
    group's."""
    from confluent_kafka import Consumer
    from spark_helpers import produce

    from kgroups.spark.analytics.job import AnalyticsConfig, Progress, run_analytics

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "kip848-orders", 2)
    produce(bootstrap, "kip848-orders", [(None, b"x", i % 2) for i in range(100)])

    def member(name: str) -> Any:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "kip848-live",
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 100,
            }
        )
        consumer.subscribe(["kip848-orders"])
        return consumer

    def poll_until(consumers: list[Any], assigned: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.05)
            if all(len(c.assignment()) == assigned for c in consumers):
                return
        raise AssertionError("the group did not settle")

    first = member("first")
    poll_until([first], 2)
    second = member("second")
    poll_until([first, second], 1)
    second.close()
    poll_until([first], 2)
    for _ in range(20):  # read the rest; close() commits where it got
        first.poll(0.05)
    first.close()

    out = str(tmp_path / "kip848")
    lines: list[str] = []
    run_analytics(
        spark,
        AnalyticsConfig(bootstrap=bootstrap, output=out, groups="kip848-live"),
        Progress(steps=8, write=lines.append),
    )
    assert "consumer_group_epoch" in lines[1] and "unknown" not in lines[1]
    epochs = spark.read.parquet(f"{out}/epochs").orderBy("offsets_offset").collect()
    bumps = [e for e in epochs if e.event == "group_epoch"]
    assert [e.cause.split(":")[0] for e in bumps] == [
        "group created; joined",
        "joined",
        "left",
        "left",
    ]
    assert [e.epoch for e in bumps] == sorted({e.epoch for e in bumps})
    assert bumps[1].reconciled_ms is not None and bumps[1].member_count == 2
    # When the second member joined, the first gave up one partition before the
    # second got it.
    steps = [e for e in epochs if e.event == "member_epoch"]
    assert any(len(e.pending_revocation) == 1 for e in steps)
    assert {tp for e in steps for tp in e.assigned} == {"kip848-orders-0", "kip848-orders-1"}
    lag = spark.read.parquet(f"{out}/lag").collect()
    assert lag and {r.group for r in lag} == {"kip848-live"} and {r.log_end for r in lag} == {50}
    assert all(r.lag_offsets == 50 - r.committed_offset for r in lag)
    report = (tmp_path / "kip848" / "report.html").read_text()
    assert f">e{bumps[1].epoch}</text>" in report and "<h3>Epochs (" in report


def test_follow_keeps_a_live_status_table(spark: Any, recorded: str, tmp_path: Path) -> None:
    from kgroups.spark.analytics.follow import follow
    from kgroups.spark.analytics.job import AnalyticsConfig

    lines: list[str] = []
    config = AnalyticsConfig(
        bootstrap=recorded, output=str(tmp_path / "live"), offsets_topic="recorded-offsets"
    )
    follow(spark, config, once=True, say=lines.append)
    live = {(r.group, r.partition): r for r in spark.table("kgroups_live_status").collect()}
    # Evaluated at the wall clock, long after the recorded commits: groups with lag
    # stopped, those caught up once included (steady ended 9 records behind).
    assert live[("slow", 0)].lag_offsets == 100 - 46
    assert live[("slow", 0)].status == "STOP" and live[("slow", 0)].group_status == "ERR"
    assert live[("steady", 1)].lag_offsets == 100 - 91 and live[("steady", 1)].status == "STOP"
    assert live[("stalled", 1)].committed_offset == 3
    assert any("new commits" in line for line in lines)

    follow(spark, config, once=True, say=lines.append)  # restarts from its saved windows
    assert lines[-1].startswith("[follow] reading") or "state restored" in " ".join(lines[-3:])
    assert spark.read.parquet(f"{config.output}/live_status").count() == len(live)


def test_small_log_runs_with_few_shuffle_partitions_and_no_progress_bars(
    recorded: str, tmp_path: Path
) -> None:
    """The command line on a log of ~150 records: one shuffle partition, and only
    its own step lines on the console, no Spark stage progress bars."""
    started = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "kgroups", "analytics", "--master", "local[2]"),
            *("--bootstrap-server", recorded, "--offsets-topic", "recorded-offsets"),
            *("--output", str(tmp_path / "cli"), "--now", str(NOW)),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{len(_offsets_log())} records: " in done.stderr
    assert "shuffle partitions: 1 " in done.stderr
    assert "[Stage " not in done.stderr and "[Stage " not in done.stdout
    jvm_notice = "WARNING: Using incubator modules"  # the JVM's own, before any logging
    others = [
        line
        for line in done.stderr.splitlines()
        if line and not line.startswith(("[analytics ", jvm_notice))
    ]
    assert others == []
    steps = [line.split("]")[0] for line in done.stderr.splitlines() if line.startswith("[")]
    assert steps[1::2] == [f"[analytics {i}/8" for i in range(1, 9)]
    summary = done.stdout.splitlines()
    assert len(summary) == 1 and f"of {len(SCENARIO) + 1} groups analysed" in summary[0]
    # Under 10 s on an idle 2-core machine; the first run on a machine also waits for
    # its JVM to write the class-data archive as it exits.
    assert took < 180, took


def test_follow_forgets_deleted_offsets_and_groups(
    spark: Any, spark_broker: BrokerThread, tmp_path: Path
) -> None:
    """Short-lived groups come and go (their offsets and group records deleted by
    tombstones, as when Kafka expires them): the live table and the saved state
    keep only what the cluster still holds."""
    import json

    from kgroups.spark.analytics.follow import follow
    from kgroups.spark.analytics.job import AnalyticsConfig

    bootstrap = spark_broker.bootstrap
    create_topic(bootstrap, "churn-offsets", 1)
    _record_churn(bootstrap, "churn-offsets")
    config = AnalyticsConfig(
        bootstrap=bootstrap, output=str(tmp_path / "churn"), offsets_topic="churn-offsets"
    )
    follow(spark, config, once=True, say=lambda line: None)
    live = spark.read.parquet(f"{config.output}/live_status").collect()
    assert sorted((r.group, r.partition) for r in live) == [("kept", 0), ("kept", 1)]
    state = json.loads((tmp_path / "churn" / "follow_state.json").read_text())
    assert {w["group"] for w in state["windows"]} == {"kept"}


def _record_churn(bootstrap: str, topic: str) -> None:
    """30 groups that commit and are deleted, then one that stays."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def send(key: bytes, value: bytes | None) -> None:
        producer.produce(topic, key=key, value=value, partition=0)

    for i in range(30):
        group = f"console-consumer-{i}"
        for generation in (1, 2):
            stored = _generation(generation, [_member(f"m-{generation}", 0)], T0 + i)
            send(encode_group_metadata_key(group), encode_group_metadata_value(stored))
        for partition in (0, 1):
            key = encode_offset_commit_key(group, "orders", partition)
            send(key, encode_offset_commit_value(OffsetCommitValue(5, "", T0 + i)))
            send(key, None)  # the offset expired
        send(encode_group_metadata_key(group), None)  # the group went away
    for partition in (0, 1):
        key = encode_offset_commit_key("kept", "orders", partition)
        send(key, encode_offset_commit_value(OffsetCommitValue(7, "", T0)))
    assert producer.flush(30) == 0
