"""Share groups beside their classic-group anchors, on one `kgroups serve` subprocess.

Two parts, each side of each read by its own group from the earliest offset of
the same records (``--size`` bytes, produced beforehand by confluent-kafka in
stored batches of up to ``--batch-records``):

1. **work**: a topic of ONE partition; ``--consumers`` share consumers (one
   share group, one process each) spend ``--work-ms`` per record
   (``time.sleep``, after the record is in hand and before it is
   acknowledged: implicit acknowledgement, at the next poll), against ONE
   consumer of a classic group, in a process of its own, doing the same per
   record: confluent-kafka's ``Consumer`` tuned as its documentation advises
   for throughput (``consume(10000)`` batches, large fetches,
   ``fetch.queue.backoff.ms``). A classic group cannot put more consumers than
   partitions to work, so its rate is one consumer's; a share group's is not.
   Each share consumer takes ``--share-max-poll-records`` records a poll
   (kgroups' with ``share.acquire.mode=record_limit``, KIP-1206, so a fetch
   never acquires more; librdkafka has no such setting and acquires whole
   stored batches). Each side is measured in steady state: the clock starts
   once every consumer of the side has processed a record and runs
   ``--seconds``.
2. **stream**: ``--records`` records on one partition, read with no work per
   record: through ShareFetch and acknowledgements (each share client's
   defaults, implicit mode: acknowledgements go with the next ShareFetch or
   in a ShareAcknowledge), beside plain Fetch with synchronous offset commits
   (confluent-kafka's classic ``Consumer`` committing after each batch of
   ``--commit-every`` records). Measured from the first batch in hand to the
   last record's acknowledgement or commit: records/s, and the broker's CPU
   time per record (``/proc/<pid>/stat``).

Prints a table, then one JSON line. Usage:

    .venv/bin/python bench/share.py [--seconds 10] [--records 200000] [--consumers 10]
        [--work-ms 5] [--batch-records 10000] [--clients kgroups,confluent]
        [--parts work,stream]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from process_broker import BrokerProcess

CTX = multiprocessing.get_context("spawn")
WORK_TOPIC = "work"
STREAM_TOPIC = "stream"


def broker_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def prepare(bootstrap: str, topic: str, count: int, size: int, batch_records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": batch_records}
    )
    payload = b"x" * size
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def share_groups_from_earliest(bootstrap: str, groups: Iterable[str]) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    for group in groups:
        entry = ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
        )
        resource_ = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
        admin.incremental_alter_configs([resource_])[resource_].result(30)


# -- part 1: work per record ------------------------------------------------------


class Worker:
    """One consumer in a process of its own (as the members of a group would be:
    in one process their threads would wait for each other's turn at the GIL):
    polls, and works ``work_s`` per record. Its counters are shared memory."""

    def __init__(self, kind: str, bootstrap: str, group: str, args: argparse.Namespace) -> None:
        self.processed = CTX.RawValue("q", 0)
        self.polls = CTX.RawValue("q", 0)
        self.polling_ns = CTX.RawValue("q", 0)
        """Time spent in poll: what the consumer waited for records (and sent)."""
        self.failure = CTX.Array("c", 2000)
        self.process = CTX.Process(
            target=run_worker,
            args=(
                kind,
                bootstrap,
                group,
                args.share_max_poll_records,
                args.work_ms / 1000,
                self.processed,
                self.polls,
                self.polling_ns,
                self.failure,
            ),
            daemon=True,
        )

    def counters(self) -> tuple[int, int, int]:
        return self.processed.value, self.polls.value, self.polling_ns.value


def open_consumer(kind: str, bootstrap: str, group: str, max_poll_records: int) -> Any:
    if kind == "classic":
        from confluent_kafka import Consumer

        consumer: Any = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "fetch.max.bytes": 52428800,
                "max.partition.fetch.bytes": 10485760,
                "fetch.queue.backoff.ms": 1,
                "queued.min.messages": 100000,
            }
        )
    elif kind == "kgroups":
        from kgroups.client import ShareConsumer

        consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "max.poll.records": max_poll_records,
                "share.acquire.mode": "record_limit",
            }
        )
    else:
        from confluent_kafka import ShareConsumer as ConfluentShareConsumer

        consumer = ConfluentShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "max.poll.records": max_poll_records,
                "log_level": 3,
            }
        )
    consumer.subscribe([WORK_TOPIC])
    return consumer


def poll_batch(kind: str, consumer: Any) -> list[Any]:
    if kind == "classic":
        return [m for m in consumer.consume(10000, 0.5) if m.error() is None]
    if kind == "kgroups":
        records: list[Any] = consumer.poll(0.5)
        return records
    return [m for m in consumer.poll(0.5) if m.error() is None]


def run_worker(
    kind: str,
    bootstrap: str,
    group: str,
    max_poll_records: int,
    work_s: float,
    processed: Any,
    polls: Any,
    polling_ns: Any,
    failure: Any,
) -> None:
    """A worker process's life: ends when its parent terminates it."""
    try:
        consumer = open_consumer(kind, bootstrap, group, max_poll_records)
        while True:
            started = time.perf_counter_ns()
            batch = poll_batch(kind, consumer)
            polling_ns.value += time.perf_counter_ns() - started
            polls.value += 1
            for _record in batch:
                time.sleep(work_s)
                processed.value += 1
    except BaseException as e:  # the parent reports it
        failure.value = repr(e).encode()[:1999]
        raise


def measure_workers(workers: list[Worker], seconds: float, warmup_limit: float) -> dict[str, Any]:
    """Steady-state rate: from the moment every worker has processed a record
    (or ``warmup_limit`` passed) for ``seconds``."""
    for w in workers:
        w.process.start()
    try:
        deadline = time.monotonic() + warmup_limit
        while time.monotonic() < deadline and not all(w.processed.value for w in workers):
            if any(w.failure.value for w in workers):
                break
            time.sleep(0.01)
        active = sum(1 for w in workers if w.processed.value)
        before = [w.counters() for w in workers]
        started = time.monotonic()
        time.sleep(seconds)
        after = [w.counters() for w in workers]
        elapsed = time.monotonic() - started
    finally:
        # Stopped as a crashed member would be: the broker releases what it held.
        for w in workers:
            w.process.terminate()
        for w in workers:
            w.process.join(30)
    errors = [w.failure.value.decode() for w in workers if w.failure.value]
    if errors:
        raise RuntimeError(f"a consumer failed: {errors[0]}")
    done = [a[0] - b[0] for a, b in zip(after, before, strict=True)]
    polls = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
    polling_s = sum(a[2] - b[2] for a, b in zip(after, before, strict=True)) / 1e9
    return {
        "records_per_s": round(sum(done) / elapsed, 1),
        "per_consumer": [round(d / elapsed) for d in done],
        "consumers_active_at_start": active,
        "polls": polls,
        "ms_per_poll": round(polling_s / max(polls, 1) * 1000, 2),
        "records_per_poll": round(sum(done) / max(polls, 1), 1),
        "seconds": round(elapsed, 2),
    }


def work_part(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    result["classic_1_consumer"] = measure_workers(
        [Worker("classic", bootstrap, "classic-work", args)], args.seconds, 60
    )
    for client in args.clients:
        group = f"share-work-{client}"
        workers = [Worker(client, bootstrap, group, args) for _ in range(args.consumers)]
        side = measure_workers(workers, args.seconds, 60)
        side["vs_classic"] = round(
            side["records_per_s"] / result["classic_1_consumer"]["records_per_s"], 2
        )
        result[f"share_{client}_{args.consumers}_consumers"] = side
    return result


# -- part 2: a stream, no work --------------------------------------------------------


class Window:
    """Records/s and broker CPU per record from the first batch in hand to the end."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.started = 0.0
        self.cpu = self.client_cpu = 0.0
        self.skipped = 0

    def open(self, first_batch: int) -> None:
        self.skipped = first_batch
        self.cpu = broker_cpu(self.broker_pid)
        self.client_cpu = own_cpu()
        self.started = time.perf_counter()

    def close(self, total: int, requests: int) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        cpu = broker_cpu(self.broker_pid) - self.cpu
        client_cpu = own_cpu() - self.client_cpu
        counted = total - self.skipped
        return {
            "records_per_s": round(counted / elapsed),
            "broker_cpu_us_per_record": round(cpu / counted * 1e6, 2),
            "client_cpu_us_per_record": round(client_cpu / counted * 1e6, 2),
            "batches": requests,
            "seconds": round(elapsed, 3),
        }


def stream_kgroups_share(bootstrap: str, count: int, pid: int) -> dict[str, Any]:
    from kgroups.client import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "share-stream-kgroups"})
    consumer.subscribe([STREAM_TOPIC])
    window = Window(pid)
    got = batches = 0
    while got < count:
        n = len(consumer.poll(1.0))
        if n and not got:
            window.open(n)
        got += n
        batches += 1 if n else 0
    consumer.commit_sync()
    result = window.close(got, batches)
    consumer.close()
    return result


def stream_confluent_share(bootstrap: str, count: int, pid: int) -> dict[str, Any]:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "share-stream-confluent", "log_level": 3}
    )
    consumer.subscribe([STREAM_TOPIC])
    window = Window(pid)
    got = batches = 0
    while got < count:
        n = sum(1 for m in consumer.poll(1.0) if m.error() is None)
        if n and not got:
            window.open(n)
        got += n
        batches += 1 if n else 0
    consumer.commit_sync()
    result = window.close(got, batches)
    consumer.close()
    return result


def stream_classic(bootstrap: str, count: int, pid: int, commit_every: int) -> dict[str, Any]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "classic-stream",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
            "fetch.queue.backoff.ms": 1,
            "queued.min.messages": 100000,
        }
    )
    consumer.subscribe([STREAM_TOPIC])
    window = Window(pid)
    got = commits = 0
    while got < count:
        n = sum(1 for m in consumer.consume(commit_every, 1.0) if m.error() is None)
        if not n:
            continue
        consumer.commit(asynchronous=False)
        if not got:
            window.open(n)
        got += n
        commits += 1
    result = window.close(got, commits)
    consumer.close()
    return result


def stream_part(bootstrap: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "classic_fetch_and_commit": stream_classic(bootstrap, args.records, pid, args.commit_every)
    }
    if "kgroups" in args.clients:
        result["share_kgroups"] = stream_kgroups_share(bootstrap, args.records, pid)
    if "confluent" in args.clients:
        result["share_confluent"] = stream_confluent_share(bootstrap, args.records, pid)
    return result


# -- output ------------------------------------------------------------------------------


def table(result: dict[str, Any]) -> str:
    lines = []
    if "work" in result:
        work = result["work"]
        anchor = work["classic_1_consumer"]["records_per_s"]
        lines += [
            f"work: one partition, {result['work_ms']} ms per record, stored batches of up to"
            f" {result['batch_records']} records (target: share >= 8x classic)",
            f"  {'side':<32} {'records/s':>10} {'vs classic':>11} {'ms/poll':>8}"
            f" {'records/poll':>13}  per consumer",
        ]
        for name, side in work.items():
            ratio = side["records_per_s"] / anchor
            lines.append(
                f"  {name:<32} {side['records_per_s']:>10.1f} {ratio:>10.2f}x"
                f" {side['ms_per_poll']:>8} {side['records_per_poll']:>13}  {side['per_consumer']}"
            )
    if "stream" in result:
        lines += [
            f"stream: {result['records']} records, one partition, no work",
            f"  {'side':<32} {'records/s':>10} {'broker us/rec':>14} {'client us/rec':>14}"
            f" {'batches':>8}",
        ]
        for name, side in result["stream"].items():
            lines.append(
                f"  {name:<32} {side['records_per_s']:>10} {side['broker_cpu_us_per_record']:>14}"
                f" {side['client_cpu_us_per_record']:>14} {side['batches']:>8}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="work part: window per side")
    parser.add_argument("--records", type=int, default=200_000, help="stream part: records")
    parser.add_argument("--consumers", type=int, default=10)
    parser.add_argument("--work-ms", type=float, default=5.0)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument(
        "--share-max-poll-records",
        type=int,
        default=20,
        help="work part: max.poll.records of each share consumer",
    )
    parser.add_argument(
        "--batch-records",
        type=int,
        default=10000,
        help="producer batch.num.messages (records per stored batch)",
    )
    parser.add_argument("--commit-every", type=int, default=500, help="stream part, classic side")
    parser.add_argument("--clients", default="kgroups,confluent")
    parser.add_argument("--parts", default="work,stream")
    args = parser.parse_args()
    args.clients = [c for c in args.clients.split(",") if c]
    parts = set(args.parts.split(","))
    result: dict[str, Any] = {
        "consumers": args.consumers,
        "work_ms": args.work_ms,
        "seconds": args.seconds,
        "records": args.records,
        "record_bytes": args.size,
        "share_max_poll_records": args.share_max_poll_records,
        "batch_records": args.batch_records,
        "load_average": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        assert broker.proc is not None
        # For a profiler to attach to: py-spy record -p <pid>
        print(f"broker pid {broker.proc.pid}", file=sys.stderr, flush=True)
        try:
            groups = [f"share-{part}-{c}" for part in ("work", "stream") for c in args.clients]
            share_groups_from_earliest(broker.bootstrap, groups)
            if "work" in parts:
                # Enough for the fastest side, warm-up included, with room to spare.
                per_second = args.consumers * 1000 / args.work_ms
                needed = int(per_second * (args.seconds + 10) * 1.5)
                prepare(broker.bootstrap, WORK_TOPIC, needed, args.size, args.batch_records)
                result["work_records"] = needed
                result["work"] = work_part(broker.bootstrap, args)
            if "stream" in parts:
                prepare(broker.bootstrap, STREAM_TOPIC, args.records, args.size, args.batch_records)
                result["stream"] = stream_part(broker.bootstrap, broker.proc.pid, args)
        finally:
            broker.stop()
    print(table(result))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
