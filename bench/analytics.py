"""`kgroups analytics` over generated offsets logs of growing size: seconds and peak memory.

For each size, a `kgroups serve` subprocess gets a topic in ``__consumer_offsets``'
record format (offset commit keys and v3 values, group metadata records for each
generation) and a data topic whose record timestamps span the same history, so
lag is computed for every commit. Then ``kgroups analytics --master local[2]``
runs as a subprocess; its wall time (start to summary line) and the peak RSS of
its process tree (driver, JVM, Python workers, sampled every 0.2 s) and the CPU
seconds it used are reported: on shared cores the CPU time is the steadier figure.
``summary_seconds`` is the time to the summary line, ``seconds`` to the process's
exit (the JVM's shutdown after it). The first run on a machine also writes the
driver JVM's class-data archive as it exits (seconds of CPU, once; see
kgroups.spark.analytics.class_archive): run it twice to see the usual figures.

Shapes: below 10 000 commits, 2 groups of 4 generations committing 2 partitions
(100 commits: the 108-record log of the latency goal); from 10 000 on, 20
groups of 50 generations committing 50 partitions.

Prints one JSON object per size. Usage:

    .venv/bin/python bench/analytics.py [--commits 100 1000000 10000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
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
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value_v3,
)

from process_broker import BrokerProcess

T0 = 1_700_000_000_000
COMMIT_INTERVAL_MS = 5000
OFFSETS_TOPIC, DATA_TOPIC = "bench-offsets", "bench-data"
OFFSETS_PARTITIONS = 4


def shape(commits: int) -> tuple[int, int, int]:
    """(groups, data partitions, generations per group)."""
    return (2, 2, 4) if commits < 10_000 else (20, 50, 50)


def offsets_log(commits: int) -> Iterator[tuple[int, int, bytes, bytes]]:
    """(offsets partition, timestamp, key, value) of a log with ``commits`` commits,
    in time order per group; the data topic holds one record per commit interval
    per partition, so the log end at round r is r + 1."""
    groups, partitions, generations = shape(commits)
    rounds = max(1, commits // (groups * partitions))
    every = max(1, rounds // generations)
    keys = {
        (g, p): encode_offset_commit_key(f"group-{g}", DATA_TOPIC, p)
        for g in range(groups)
        for p in range(partitions)
    }
    emitted = 0
    for r in range(rounds):
        t = T0 + r * COMMIT_INTERVAL_MS
        for g in range(groups):
            if r % every == 0 and r // every < generations:
                yield (
                    g % OFFSETS_PARTITIONS,
                    t,
                    encode_group_metadata_key(f"group-{g}"),
                    (_generation(g, r // every + 1, partitions, t)),
                )
            lag = 0 if g % 3 == 0 else (g % 3) * (r // 10)  # caught up, or falling behind
            for p in range(partitions):
                if emitted == commits:
                    return
                value = encode_offset_commit_value_v3(max(0, r + 1 - lag), -1, "", t + 100)
                yield g % OFFSETS_PARTITIONS, t + 100, keys[(g, p)], value
                emitted += 1


def _generation(group: int, generation: int, partitions: int, t: int) -> bytes:
    # Two members, then one: every other generation a member went away.
    count = 2 if generation % 2 else 1
    members = tuple(
        MemberMetadataValue(
            member_id=f"c{m}-g{generation}",
            group_instance_id=None,
            client_id=f"c{m}",
            client_host="/10.0.0.1",
            rebalance_timeout=30_000,
            session_timeout=10_000,
            subscription=encode_subscription(Subscription([DATA_TOPIC])),
            assignment=encode_assignment(
                Assignment(
                    [TopicPartition(DATA_TOPIC, p) for p in range(partitions) if p % count == m]
                )
            ),
        )
        for m in range(count)
    )
    value = GroupMetadataValue("consumer", generation, "range", members[0].member_id, t, members)
    return encode_group_metadata_value(value)


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "compression.type": "lz4",
        }
    )


def _send(producer: Any, topic: str, partition: int, t: int, key: bytes, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key, partition=partition, timestamp=t)
            return
        except BufferError:
            producer.poll(0.01)


def generate(bootstrap: str, commits: int) -> tuple[int, int]:
    """Write the log and the data topic; returns (records written, last timestamp)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    _, partitions, _ = shape(commits)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name, count in ((OFFSETS_TOPIC, OFFSETS_PARTITIONS), (DATA_TOPIC, partitions)):
        admin.create_topics([NewTopic(name, count, 1)])[name].result(20)
    producer = _producer(bootstrap)
    records, last = 0, T0
    for partition, t, key, value in offsets_log(commits):
        _send(producer, OFFSETS_TOPIC, partition, t, key, value)
        records, last = records + 1, max(last, t)
    for r in range((last - T0) // COMMIT_INTERVAL_MS + 1):
        for p in range(partitions):
            _send(producer, DATA_TOPIC, p, T0 + r * COMMIT_INTERVAL_MS, b"", b"x" * 20)
    assert producer.flush(600) == 0
    return records, last


def _role(pid: int) -> str:
    """Which part of the job a process is: the JVM, a Python worker, or the driver."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "driver"
    if b"pyspark.daemon" in command or b"pyspark.worker" in command:
        return "python_workers"
    return "jvm" if b"java" in command.split(b"\0", 1)[0] else "driver"


def _tree_usage(root: int) -> tuple[int, dict[int, int]]:
    """Resident bytes of ``root`` and all its descendants, and each one's CPU ticks."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    rss, ticks, stack = 0, {}, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        rss += pages * os.sysconf("SC_PAGE_SIZE")
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
    return rss, ticks


def run_analytics(
    bootstrap: str,
    output: Path,
    now_ms: int,
    driver_memory: str | None = None,
    conf: tuple[str, ...] = (),
) -> dict[str, Any]:
    args = [
        *(sys.executable, "-m", "kgroups", "analytics", "--master", "local[2]"),
        *("--bootstrap-server", bootstrap, "--offsets-topic", OFFSETS_TOPIC),
        *("--output", str(output), "--now", str(now_ms)),
    ]
    started = time.perf_counter()
    env = dict(os.environ)
    submit = [f"--conf {setting}" for setting in conf]
    if driver_memory:  # the JVM's heap (Spark's default: 1g)
        submit.append(f"--driver-memory {driver_memory}")
    if submit:
        env["PYSPARK_SUBMIT_ARGS"] = " ".join([*submit, "pyspark-shell"])
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    peak = 0
    cpu: dict[int, int] = {}  # the last CPU ticks seen per process of the tree
    roles: dict[int, str] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.2):
            rss, ticks = _tree_usage(proc.pid)
            peak = max(peak, rss)
            cpu.update(ticks)
            # A process may exec another (spark-submit's script becomes the JVM).
            roles.update((pid, _role(pid)) for pid in ticks if roles.get(pid, "driver") == "driver")

    lines: list[str] = []

    def relay() -> None:
        # Step lines as they come, with the time and CPU so far: a long run
        # that is stopped still shows how far it went.
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("[analytics"):
                so_far = sum(cpu.values()) / os.sysconf("SC_CLK_TCK")
                at = time.perf_counter() - started
                print(f"{at:7.1f} s, {so_far:7.1f} CPU s: {line.rstrip()}", file=sys.stderr)

    summary_at = started

    def read_stdout() -> None:
        nonlocal summary_at
        assert proc.stdout is not None
        for line in proc.stdout:
            stdout_lines.append(line)
            summary_at = time.perf_counter()

    stdout_lines: list[str] = []
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    relayer = threading.Thread(target=relay, daemon=True)
    relayer.start()
    proc.wait()
    reader.join()
    relayer.join()
    stderr = "".join(lines)
    elapsed = time.perf_counter() - started
    stdout = "".join(stdout_lines)
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"analytics failed:\n{stderr[-3000:]}")
    steps = [line for line in stderr.splitlines() if line.startswith("[analytics") and "(" in line]
    return {
        "seconds": round(elapsed, 1),
        # Process start to the summary line (the tables and report are written).
        "summary_seconds": round(summary_at - started, 1),
        "peak_rss_mb": round(peak / 2**20),
        # CPU seconds of the whole tree (sampled: a process's last 0.2 s may be
        # missed): what the run costs an idle machine, whatever shares the cores.
        "cpu_seconds": round(sum(cpu.values()) / os.sysconf("SC_CLK_TCK"), 1),
        "cpu_seconds_by_role": {
            role: round(
                sum(t for pid, t in cpu.items() if roles[pid] == role) / os.sysconf("SC_CLK_TCK"), 1
            )
            for role in sorted(set(roles.values()))
        },
        "steps_s": [float(line.rsplit("(", 1)[1].split()[0]) for line in steps],
        "spark_progress_bars": "[Stage " in stderr,
        "summary": stdout.strip().splitlines()[-1],
    }


def _lag_coverage(report: Path) -> float:
    """Share of the lag table's rows with a known log end (1.0: the index was complete)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    log_end = pq.read_table(report / "lag", columns=["log_end"]).column("log_end")
    return round(1 - pc.sum(pc.is_null(log_end)).as_py() / max(len(log_end), 1), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, nargs="+", default=[100, 1_000_000, 10_000_000])
    ap.add_argument(
        "--driver-memory", metavar="SIZE", help="the Spark JVM's heap, e.g. 4g (default 1g)"
    )
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    for commits in args.commits:
        work = Path(tempfile.mkdtemp(prefix="kgbench-analytics."))
        # The generated history is years old: no retention may delete it mid-run.
        broker = BrokerProcess(work / "data", None, "log.retention.ms=-1").start()
        try:
            started = time.perf_counter()
            records, last = generate(broker.bootstrap, commits)
            out: dict[str, Any] = {"bench": "analytics", "commits": commits, "records": records}
            out["generate_seconds"] = round(time.perf_counter() - started, 1)
            out["driver_memory"] = args.driver_memory or "1g"
            out["conf"] = args.conf
            out.update(
                run_analytics(
                    broker.bootstrap,
                    work / "report",
                    last + 60_000,
                    args.driver_memory,
                    tuple(args.conf),
                )
            )
            out["lag_rows_with_log_end"] = _lag_coverage(work / "report")
            print(json.dumps(out), flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
