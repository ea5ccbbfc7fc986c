"""TLS cost: connection setup rate and confluent-kafka produce/fetch throughput
over an SSL listener, beside a PLAINTEXT listener of the same broker in the same run.

    .venv/bin/python bench/tls.py [--messages 200000] [--connections 300]

Starts `kgroups serve` with both listeners (certificates made for the run) and
prints one JSON object per listener. Beside the throughput, the broker's CPU time
per MB produced and fetched (user + system, from /proc): a figure that a busy
machine disturbs much less than the throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import ssl
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from certificates import Authority
from process_broker import BrokerProcess, free_port

# ApiVersions v0, correlation id 1, client id "bench": the first request a client sends.
_API_VERSIONS = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
_REQUEST = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS


def connection_rate(port: int, context: ssl.SSLContext | None, count: int) -> float:
    """Connections per second, each set up (TLS handshake included) and asked ApiVersions."""
    started = time.perf_counter()
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port)) as raw:
            conn = raw if context is None else context.wrap_socket(raw, server_hostname="localhost")
            conn.sendall(_REQUEST)
            size = struct.unpack(">i", _read(conn, 4))[0]
            _read(conn, size)
            conn.close()
    return count / (time.perf_counter() - started)


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def produce(client: dict[str, str], topic: str, count: int, size: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({**client, "linger.ms": "5", "batch.size": "1000000"})
    payload = b"x" * size
    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=payload)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return count * size / (time.perf_counter() - started) / 1e6


def fetch(client: dict[str, str], topic: str, count: int, size: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**client, "group.id": "bench", "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    started = time.perf_counter()
    got = 0
    while got < count:
        got += sum(1 for m in consumer.consume(10000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return count * size / elapsed / 1e6


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=300)
    args = ap.parse_args()
    from confluent_kafka.admin import AdminClient, NewTopic

    work = Path(tempfile.mkdtemp(prefix="kgbench-tls."))
    ca = Authority(work / "pki")
    server = ca.server()
    port, ssl_port = free_port(), free_port()
    broker = BrokerProcess(
        work / "data",
        port,
        f"listeners=PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port}",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={server.both}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={ca.cert}",
    ).start()
    try:
        tls = ssl.create_default_context(cafile=str(ca.cert))
        cases: list[tuple[str, int, ssl.SSLContext | None, dict[str, str]]] = [
            ("PLAINTEXT", port, None, {"bootstrap.servers": f"127.0.0.1:{port}"}),
            (
                "SSL",
                ssl_port,
                tls,
                {
                    "bootstrap.servers": f"127.0.0.1:{ssl_port}",
                    "security.protocol": "SSL",
                    "ssl.ca.location": str(ca.cert),
                },
            ),
        ]
        for name, listener_port, context, client in cases:
            topic = f"bench-{name.lower()}"
            admin = AdminClient(client)
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
            assert broker.proc is not None
            cpu_connecting = cpu_seconds(broker.proc.pid)
            rate = connection_rate(listener_port, context, args.connections)
            cpu_connected = cpu_seconds(broker.proc.pid)
            mb = args.messages * args.size / 1e6
            cpu_before = cpu_seconds(broker.proc.pid)
            produce_rate = produce(client, topic, args.messages, args.size)
            cpu_produced = cpu_seconds(broker.proc.pid)
            fetch_rate = fetch(client, topic, args.messages, args.size)
            cpu_fetched = cpu_seconds(broker.proc.pid)
            result = {
                "bench": "tls",
                "listener": name,
                "connections_per_s": round(rate),
                "broker_cpu_ms_per_connection": round(
                    (cpu_connected - cpu_connecting) * 1000 / args.connections, 2
                ),
                "message_bytes": args.size,
                "messages": args.messages,
                "produce_mb_per_s": round(produce_rate, 1),
                "fetch_mb_per_s": round(fetch_rate, 1),
                "broker_cpu_ms_per_produced_mb": round((cpu_produced - cpu_before) * 1000 / mb, 1),
                "broker_cpu_ms_per_fetched_mb": round((cpu_fetched - cpu_produced) * 1000 / mb, 1),
            }
            print(json.dumps(result), flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
