"""Start-to-first-ack: the time from asking for a broker to a confluent-kafka
producer's first acknowledgement on it, for EmbeddedBroker in a thread and in
a subprocess, beside librdkafka's mock cluster (also a subprocess) measured in
the same run. Prints one JSON line per kind: median and max over the runs, in
milliseconds.

    python bench/embedded_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from confluent_kafka import Producer
from mock_cluster import MockCluster

from kgroups.testing import EmbeddedBroker


def first_ack(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    acked: list[object] = []
    producer.produce("start", b"x", on_delivery=lambda err, _msg: acked.append(err))
    if producer.flush(30) or acked != [None]:
        raise RuntimeError(f"no acknowledgement: {acked}")


@contextmanager
def embedded(process: bool) -> Iterator[str]:
    with EmbeddedBroker(process=process) as broker:
        yield broker.bootstrap_servers


@contextmanager
def mock() -> Iterator[str]:
    cluster = MockCluster().start()
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


def measure(start: Callable[[], AbstractContextManager[str]], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        with start() as bootstrap:
            first_ack(bootstrap)
            times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    kinds: dict[str, Callable[[], AbstractContextManager[str]]] = {
        "embedded_thread": lambda: embedded(False),
        "embedded_process": lambda: embedded(True),
        "librdkafka_mock": mock,
    }
    for name, start in kinds.items():
        times = measure(start, args.runs)
        figures = {
            "kind": name,
            "runs": args.runs,
            "median_ms": round(statistics.median(times), 1),
            "max_ms": round(max(times), 1),
        }
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
