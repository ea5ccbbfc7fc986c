"""How soon a test has a broker to talk to.

Two figures, each the median (and max) over ``--runs``, in milliseconds:

- ``fresh_*``: from spawning a fresh Python interpreter to its first answered
  Metadata request, with the interpreter's own start (``python -c pass``)
  reported beside. For kgroups: ``from kgroups.testing import EmbeddedBroker``,
  ``EmbeddedBroker()`` (a thread broker), then one Metadata request over a raw
  socket (no client library to import); the child also reports its import and
  start times (``EmbeddedBroker()`` imports the broker's own modules), and the
  CPU time it spent in all (``cpu_ms``: the figure to compare on a loaded
  machine, where the wall clock mostly measures the wait for a core). For
  librdkafka's mock cluster (``rd_kafka_mock_cluster_new``,
  reached from confluent-kafka through ``test.mock.num.brokers``): importing
  confluent_kafka, a Producer with one mock broker, and its first metadata.
  For ``kgroups serve`` (what ``EmbeddedBroker(process=True)`` runs): spawning
  it on an empty temporary directory to its first answered Metadata request,
  the bench connecting until it listens; its ``cpu_ms`` is the process's user
  and system time then, read from /proc (in 10 ms ticks). The kinds take
  turns, run after run, so that each meets the same moments of a busy machine.
- ``warm_*``: in this interpreter, everything imported, from the call to a
  confluent-kafka producer's first acknowledgement, for EmbeddedBroker in a
  thread and in a subprocess and for the mock in a subprocess.

Prints one JSON line per figure.

    python bench/embedded_start.py [--runs 9] [--fresh-only] [--no-serve]

The children inherit the environment: with ``PYTHONDONTWRITEBYTECODE`` set and
no bytecode cache, every run measures compiling. Unset it and point
``PYTHONPYCACHEPREFIX`` at a directory to measure what a test run pays.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

EMBEDDED_CHILD = """
import json, socket, struct, time
began = time.perf_counter()
from kgroups.testing import EmbeddedBroker
imported = time.perf_counter()
broker = EmbeddedBroker()
started = time.perf_counter()
with socket.create_connection(("127.0.0.1", broker.port)) as s:
    # Metadata v0, correlation id 7, client id "bench", all topics.
    body = struct.pack(">hhih5si", 3, 0, 7, 5, b"bench", 0)
    s.sendall(struct.pack(">i", len(body)) + body)
    size, correlation = struct.unpack(">ii", s.recv(8))
    assert correlation == 7 and size > 4
answered = time.perf_counter()
print(json.dumps({
    "import_ms": (imported - began) * 1000,
    "start_ms": (started - imported) * 1000,
    "metadata_ms": (answered - started) * 1000,
    "cpu_ms": time.process_time() * 1000,
}), flush=True)
broker.stop()
"""

MOCK_CHILD = """
import json, time
began = time.perf_counter()
from confluent_kafka import Producer
imported = time.perf_counter()
producer = Producer({"test.mock.num.brokers": 1})
producer.list_topics(timeout=10)
answered = time.perf_counter()
print(json.dumps({
    "import_ms": (imported - began) * 1000,
    "metadata_ms": (answered - imported) * 1000,
    "cpu_ms": time.process_time() * 1000,
}), flush=True)
"""


def fresh(child: str) -> tuple[float, dict[str, float]]:
    """Spawn to the child's first answer line, and what the child measured."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - began) * 1000
    proc.wait(30)
    if not line:
        raise RuntimeError(f"the child failed ({proc.returncode})")
    inner: dict[str, float] = json.loads(line) if line.strip() else {}
    return elapsed, inner


# Metadata v0, correlation id 7, client id "bench", all topics.
METADATA_V0 = struct.pack(">hhih5si", 3, 0, 7, 5, b"bench", 0)


def answers_metadata(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(struct.pack(">i", len(METADATA_V0)) + METADATA_V0)
            size, correlation = struct.unpack(">ii", s.recv(8))
            return correlation == 7 and size > 4
    except OSError:
        return False


def process_cpu_ms(pid: int) -> float:
    """User and system time of a running process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) * 1000 / os.sysconf("SC_CLK_TCK")


def fresh_serve() -> tuple[float, dict[str, float]]:
    """Spawn `kgroups serve` to its first answered Metadata, and its CPU time then."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="kgroups-bench-") as data:
        began = time.perf_counter()
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "kgroups", "serve", "--log-level", "WARNING"),
                *("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"),
                *("--override", f"log.dirs={data}"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not answers_metadata(port):
                if proc.poll() is not None:
                    raise RuntimeError(f"kgroups serve exited ({proc.returncode})")
                time.sleep(0.005)
            elapsed = (time.perf_counter() - began) * 1000
            cpu = process_cpu_ms(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    return elapsed, {"cpu_ms": cpu}


def report(kind: str, times: list[float], **inner: list[float]) -> None:
    figures: dict[str, Any] = {
        "kind": kind,
        "runs": len(times),
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
    }
    for name, values in inner.items():
        figures[f"{name}_median"] = round(statistics.median(values), 1)
    print(json.dumps(figures), flush=True)


def measure_fresh(runs: int, serve: bool) -> None:
    # The interpreter alone.
    alone = "import json, time; print(json.dumps({'cpu_ms': time.process_time() * 1000}))"
    python = [fresh(alone) for _ in range(runs)]
    report("fresh_python_startup", [t for t, _ in python], cpu_ms=[p["cpu_ms"] for _, p in python])
    kinds: dict[str, Callable[[], tuple[float, dict[str, float]]]] = {
        "fresh_embedded_thread": lambda: fresh(EMBEDDED_CHILD),
        "fresh_librdkafka_mock": lambda: fresh(MOCK_CHILD),
    }
    if serve:
        kinds["fresh_kgroups_serve"] = fresh_serve
    totals: dict[str, list[float]] = {kind: [] for kind in kinds}
    inner: dict[str, dict[str, list[float]]] = {kind: {} for kind in kinds}
    for _ in range(runs):
        for kind, measure in kinds.items():
            total, parts = measure()
            totals[kind].append(total)
            for name, value in parts.items():
                inner[kind].setdefault(name, []).append(value)
    for kind in kinds:
        report(kind, totals[kind], **inner[kind])


def first_ack(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    acked: list[object] = []
    producer.produce("start", b"x", on_delivery=lambda err, _msg: acked.append(err))
    if producer.flush(30) or acked != [None]:
        raise RuntimeError(f"no acknowledgement: {acked}")


@contextmanager
def embedded(process: bool) -> Iterator[str]:
    from kgroups.testing import EmbeddedBroker

    with EmbeddedBroker(process=process) as broker:
        yield broker.bootstrap_servers


@contextmanager
def mock() -> Iterator[str]:
    from mock_cluster import MockCluster

    cluster = MockCluster().start()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


def measure_warm(start: Callable[[], AbstractContextManager[str]], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        with start() as bootstrap:
            first_ack(bootstrap)
            times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--fresh-only", action="store_true", help="only the fresh interpreter figures")
    ap.add_argument("--no-serve", action="store_true", help="without `kgroups serve`")
    args = ap.parse_args()
    measure_fresh(args.runs, not args.no_serve)
    if args.fresh_only:
        return
    kinds: dict[str, Callable[[], AbstractContextManager[str]]] = {
        "warm_embedded_thread": lambda: embedded(False),
        "warm_embedded_process": lambda: embedded(True),
        "warm_librdkafka_mock": mock,
    }
    for name, start in kinds.items():
        report(name, measure_warm(start, args.runs))


if __name__ == "__main__":
    main()
