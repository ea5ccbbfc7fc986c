"""librdkafka's in-memory mock cluster (shipped inside the confluent-kafka wheel)
in a subprocess, as a reference point for the benchmarks.

A client created with `test.mock.num.brokers=1` starts the mock broker on a
thread of its own and must stay alive while the mock serves; its address is the
one broker of the client's own metadata. Running it in a subprocess gives it a
process of its own, like the `kgroups serve` it is compared with: the load
generator competes with either in the same way, and each one's CPU time can be
read from /proc.

Run directly (`mock_cluster.py [TOPIC...]`) it prints `host:port` and serves
until its stdin closes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


class MockCluster:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, topics: tuple[str, ...] = ()) -> MockCluster:
        """Start the mock, with `topics` created (the mock lacks CreateTopics:
        asking for their metadata creates them, with 4 partitions each)."""
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), *topics],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # librdkafka logs that the mock replaced the bootstrap
            text=True,
        )
        assert self.proc.stdout is not None
        self.bootstrap = self.proc.stdout.readline().strip()
        if not self.bootstrap:
            raise RuntimeError(f"mock cluster exited with {self.proc.wait(10)}")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def serve() -> None:
    from confluent_kafka import Producer

    client = Producer({"test.mock.num.brokers": 1})
    (broker,) = client.list_topics(timeout=10).brokers.values()
    for topic in sys.argv[1:]:
        client.list_topics(topic, timeout=10)
    print(f"{broker.host}:{broker.port}", flush=True)
    sys.stdin.read()  # the client, and so the mock, lives until stdin closes
    del client


if __name__ == "__main__":
    serve()
