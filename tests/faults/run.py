"""One fault run, from a seed: start the cluster and the workloads, inject
the seed's faults, heal, let the clients settle, read every partition in
full, and check the history. The history is saved beside the brokers' logs,
so a failing run can be read op by op."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cluster_brokers import create_topic, leaders, wait_for

from faults.checker import Result, check
from faults.cluster import GROUP_SESSION_MS, QUIET, FaultCluster, HaStore
from faults.history import INFO, INVOKE, OK, History
from faults.liveness import hung, liveness
from faults.nemesis import KINDS, Fault, Nemesis, schedule
from faults.transactions import DEAF_S, TRANSACTION_TIMEOUT_S
from faults.workloads import (
    OUTPUT,
    PARTITIONS,
    TOPIC,
    TOPICS,
    TXN_GROUP,
    Workload,
    standard,
    unfenced,
)

# Beyond the group's session timeout: the rebalance that follows it, and the
# member's own check of its session, which runs on its poll loop.
SESSION_SLACK_S = 3.0
# After the last fault heals, every workload must work again within this
# (liveness.py): beyond the group's session timeout and the rebalance, and
# librdkafka's longest reconnection backoff (10 s); and beyond the timeout of
# a transaction left open by a client the faults cut off, whose pending
# offsets keep the group's stable offset reads (UNSTABLE_OFFSET_COMMIT), and
# so its new owner, waiting until the coordinator aborts it, as on Kafka.
PROGRESS_BOUND_S = TRANSACTION_TIMEOUT_S + 30.0
SETTLE_S = 2.0  # once every workload made progress, for the last reads to land
STOP_S = 60.0  # for the workloads to close their clients


@dataclass
class Report:
    seed: int
    faults: list[Fault]
    injected: int = 0
    skipped: int = 0
    result: Result = field(default_factory=Result)
    ops: int = 0
    seconds: float = 0.0
    history_path: Path | None = None
    notes: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.injected} faults injected ({self.skipped} skipped),"
            f" {self.ops} operations, {len(self.result.anomalies)} anomalies,"
            f" {self.seconds:.0f} s; history {self.history_path}",
            "checked: " + ", ".join(f"{k} {v}" for k, v in sorted(self.result.checked.items())),
        ]
        if self.notes:
            lines.append("noted: " + ", ".join(f"{k} {v}" for k, v in sorted(self.notes.items())))
        lines += [f"  fault {f}" for f in self.faults]
        lines += [f"  ANOMALY {a}" for a in self.result.anomalies[:50]]
        return "\n".join(lines)


def run(
    data: Path,
    store_url: str,
    seed: int,
    seconds: float,
    brokers: int = 3,
    kinds: tuple[str, ...] = KINDS,
    concurrency: int = 2,
    ha_store: HaStore | None = None,
) -> Report:
    began = time.monotonic()
    if ha_store is None:  # no standby to fail over to: the schedule draws other faults
        kinds = tuple(k for k in kinds if k != "store-failover")
    faults = schedule(seed, seconds, brokers, kinds, concurrency)
    report = Report(seed, faults)
    history = History()
    cluster = FaultCluster(data, store_url, brokers, ha_store)
    members_unfenced: frozenset[str] = frozenset()
    try:
        cluster.start()
        port = cluster.nodes[0].broker.port
        for topic in TOPICS:
            create_topic(port, topic, PARTITIONS)
            leaders(port, topic)
        stop = threading.Event()
        workloads = standard(cluster.bootstrap, history, seed)
        members_unfenced = unfenced(workloads)
        threads = [
            threading.Thread(target=w.run, args=(stop,), name=w.name, daemon=True)
            for w in workloads
        ]
        for t in threads:
            t.start()
        time.sleep(2)  # the groups form before the first fault
        nemesis = Nemesis(cluster, history, faults)
        nemesis.run()
        report.injected, report.skipped = nemesis.injected, nemesis.skipped
        settle(history, workloads)
        stop.set()
        deadline = time.monotonic() + STOP_S
        stuck = hung(history.ops)
        for t in threads:
            t.join(0 if t.name in stuck else max(0.0, deadline - time.monotonic()))
            if t.is_alive():  # stuck inside its client library: see liveness.py
                report.notes[f"{t.name} did not stop"] += 1
                if t.name not in stuck:
                    history.add(t.name, INFO, "hung")
        final_read(cluster, history)
    finally:
        cluster.close()
        report.history_path = data / "history.jsonl"
        history.save(report.history_path)
    report.result = check(
        history.ops,
        GROUP_SESSION_MS / 1000 + SESSION_SLACK_S,
        PROGRESS_BOUND_S,
        {TXN_GROUP: DEAF_S},
        members_unfenced,
    )
    report.ops = len(history.ops)
    report.notes.update(op.f for op in history.ops if op.f in ("fatal", "error", "wedged"))
    report.seconds = time.monotonic() - began
    return report


def settle(history: History, workloads: list[Workload]) -> None:
    """Until every workload has made progress since the heal (or the bound
    has passed: the checker reports what stalled), then a little more. A
    workload stuck in a call past its timeout is marked hung meanwhile."""
    deadline = time.monotonic() + PROGRESS_BOUND_S
    while time.monotonic() < deadline:
        stuck = hung(history.ops)
        for w in workloads:
            if w.name not in stuck and getattr(w, "stuck", lambda: False)():
                history.add(w.name, INFO, "hung")
        if not any(kind == "" for kind, _ in liveness(list(history.ops), PROGRESS_BOUND_S)):
            break
        time.sleep(0.5)
    time.sleep(SETTLE_S)


def final_read(cluster: FaultCluster, history: History) -> None:
    """Every topic in full, read_uncommitted, and the output of transactions
    read_committed too, once the healed cluster leads every partition; then
    the transformers' committed offsets."""
    for topic in TOPICS:
        wait_for(lambda t=topic: len(leaders(cluster.nodes[0].broker.port, t)) == PARTITIONS, 60)
    read_topic(cluster, history, TOPIC, "read_uncommitted")
    read_topic(cluster, history, OUTPUT, "read_uncommitted")
    read_topic(cluster, history, OUTPUT, "read_committed")
    committed_offsets(cluster, history, TXN_GROUP)


def read_topic(cluster: FaultCluster, history: History, topic: str, isolation: str) -> None:
    """Every partition of ``topic`` from offset 0 to its end (the last stable
    offset when read_committed: every transaction has ended by now)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "final-read-unused",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "log_level": QUIET,
        }
    )
    try:
        ends: dict[int, int] = {}
        for p in range(PARTITIONS):
            deadline = time.monotonic() + 60
            while p not in ends:
                try:
                    ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), 5)[1]
                except Exception:
                    assert time.monotonic() < deadline, f"no end offset of {topic}/{p}"
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        records: dict[int, list[list[object]]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + 120

        def behind() -> list[int]:
            # The position, not the last record: markers and aborted records
            # at the end are never returned.
            at = consumer.position([TopicPartition(topic, p) for p in range(PARTITIONS)])
            return [tp.partition for tp in at if 0 < ends[tp.partition] > tp.offset]

        while behind():
            assert time.monotonic() < deadline, f"final read of {topic} stuck short of {ends}"
            for m in consumer.consume(500, 0.5):
                if m.error() is None and m.offset() < ends[m.partition()]:
                    records[m.partition()].append([m.offset(), m.value().decode()])
        for p in range(PARTITIONS):
            history.add(
                "final",
                OK,
                "final-read",
                topic=topic,
                partition=p,
                read_committed=isolation == "read_committed",
                records=records[p],
            )
    finally:
        consumer.close()


def committed_offsets(cluster: FaultCluster, history: History, group: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "log_level": QUIET}
    )
    try:
        history.add("final", INVOKE, "committed", group=group)
        parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        offsets = {
            tp.partition: tp.offset for tp in consumer.committed(parts, 60) if tp.offset >= 0
        }
        history.add("final", OK, "committed", group=group, offsets=offsets)
    finally:
        consumer.close()
