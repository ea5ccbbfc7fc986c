"""Heartbeats/s and latency of the group coordinator, beside librdkafka's mock cluster.

In one run, against librdkafka's in-memory mock cluster (bench/mock_cluster.py)
and against a `kgroups serve` subprocess (ephemeral port, temporary data dir):

- G groups x M members are formed as clients form them, one connection per
  member (a JoinGroup holds its connection until the join completes, in Kafka
  and kgroups alike): JoinGroup, SyncGroup; then those connections close (both
  keep a member until its session times out; `--keep-member-connections` keeps
  them open and idle, as real consumers would);
- saturation: every member's Heartbeat, encoded once, is sent round-robin over
  C connections, each keeping W requests in flight; heartbeats/s, p50/p99;
- half load: the same, paced at 50 % of that server's own saturated rate
  (still at most W in flight per connection); p50/p99 at that rate.

Latency runs from writing a request to reading its answer; the first half
second of each phase is left out. `server_cpu_us_per_heartbeat` is the
server process's CPU time (from /proc) over the phase per heartbeat sent in it:
less noisy than the rate on a shared machine. `load_generator_cpu_share` is
this process's CPU time over the phase's wall time: near 1, the figure measures
the load generator (it can at the mock's rates), not the server. The mock
polls every open connection on each turn, so with `--keep-member-connections`
its cost per heartbeat grows with the members' idle connections.

Both servers get the same bytes: JoinGroup v5, SyncGroup v3, Heartbeat v4. The
mock advertises JoinGroup v6 and SyncGroup v4 but closes the connection on
them (their first flexible versions; librdkafka's own client sends older ones).
The mock also answers INVALID_REQUEST to a follower's SyncGroup that comes after
the leader's, so the leader syncs 0.2 s after its JoinGroup answer.

Prints one JSON object with both servers and the ratio kgroups / mock. Usage:

    .venv/bin/python bench/heartbeats.py [--groups 100] [--members 10]
        [--connections 3] [--in-flight 64] [--seconds 5] [--servers mock,kgroups]
        [--keep-member-connections] [--kgroups-bootstrap HOST:PORT]

`--kgroups-bootstrap` measures a broker started by hand instead of a
subprocess, e.g. one running under a profiler (then the server CPU figure
is left out).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mock_cluster import MockCluster
from rebalance import BenchMember, form_group

from process_broker import BrokerProcess

_SIZE = struct.Struct(">i")
_HEARTBEAT_HEADER = struct.Struct(">ihhih")  # size, api key, version, correlation, client id
_WARMUP = 0.5
# How both servers see groups formed (see the docstring): versions the mock
# serves, and a leader that syncs after its followers.
MOCK_COMPATIBLE: dict[str, Any] = {"join_version": 5, "sync_version": 3, "leader_sync_delay": 0.2}


def heartbeat_frame(member: BenchMember, correlation: int) -> bytes:
    """Heartbeat v4 (flexible): request header v2, then group, generation,
    member id, no group instance id, no tagged fields."""
    client = b"hb"
    body = (
        _compact(member.group.encode())
        + struct.pack(">i", member.generation)
        + _compact(member.member_id.encode())
        + b"\x00"  # group_instance_id: null
        + b"\x00"  # tagged fields
    )
    size = 10 + len(client) + 1 + len(body)
    return _HEARTBEAT_HEADER.pack(size, 12, 4, correlation, len(client)) + client + b"\x00" + body


def _compact(data: bytes) -> bytes:
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


class HeartbeatLoad(asyncio.Protocol):
    """One connection's load: at most `window` heartbeats in flight, sent as
    answers come back (rate None) or paced at `rate` per second. Answers come
    in request order, so send times wait in a FIFO."""

    def __init__(self, frames: list[bytes], window: int, rate: float | None) -> None:
        self.frames = itertools.cycle(frames)
        self.window = window
        self.rate = rate
        self.in_flight: collections.deque[tuple[float, int]] = collections.deque()
        self.buffer = bytearray()
        self.latencies: list[float] = []
        self.errors: collections.Counter[int] = collections.Counter()
        self.measure_from = 0.0
        self.sent = 0
        self.started = 0.0
        self.stopped = False
        self.transport: Any = None
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def start(self, at: float) -> None:
        self.started = at
        self.measure_from = at + _WARMUP
        if self.rate is None:
            self._send(self.window)
        else:
            self._tick()

    def _send(self, count: int) -> None:
        if count <= 0 or self.stopped:
            return
        now = time.perf_counter()
        batch = [next(self.frames) for _ in range(count)]
        for f in batch:
            self.in_flight.append((now, _SIZE.unpack_from(f, 8)[0]))
        self.sent += count
        self.transport.write(b"".join(batch))

    def _tick(self) -> None:
        if self.stopped:
            return
        assert self.rate is not None
        due = int((time.perf_counter() - self.started) * self.rate) - self.sent
        self._send(min(due, self.window - len(self.in_flight)))
        asyncio.get_running_loop().call_later(0.001, self._tick)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buf = self.buffer
        buf += data
        pos, end, answered = 0, len(buf), 0
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if end - pos - 4 < size:
                break
            # correlation id (4), tagged fields (1), throttle (4), error code (2)
            correlation, _, _, error = struct.unpack_from(">iBih", buf, pos + 4)
            sent, expected = self.in_flight.popleft()
            assert correlation == expected, (correlation, expected)
            if error:
                self.errors[error] += 1
            elif sent >= self.measure_from:
                self.latencies.append(now - sent)
            pos += 4 + size
            answered += 1
        del buf[:pos]
        if self.rate is None:
            self._send(answered)


def cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def heartbeat_phase(
    host: str,
    port: int,
    members: list[Any],
    args: argparse.Namespace,
    rate: float | None,
    pid: int | None,
    frame: Callable[[Any, int], bytes] = heartbeat_frame,
) -> dict[str, Any]:
    """`frame(member, correlation)` encodes a member's heartbeat; its answer
    must start, as Heartbeat's does, with throttle time and error code."""
    loop = asyncio.get_running_loop()
    per_conn = rate / args.connections if rate is not None else None
    loads = []
    for c in range(args.connections):
        frames = [frame(m, i) for i, m in enumerate(members) if i % args.connections == c]
        _, load = await loop.create_connection(
            lambda f=frames: HeartbeatLoad(f, args.in_flight, per_conn),  # type: ignore[misc]
            host,
            port,
        )
        loads.append(load)
    cpu_before, client_before = cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    for load in loads:
        load.start(started)
    await asyncio.sleep(args.seconds + _WARMUP)
    for load in loads:
        load.stopped = True
    elapsed = time.perf_counter() - started - _WARMUP
    cpu, client = cpu_seconds(pid) - cpu_before, time.process_time() - client_before
    await asyncio.sleep(0.2)  # let answers in flight arrive before closing
    for load in loads:
        load.transport.close()
    latencies = sorted(itertools.chain.from_iterable(load.latencies for load in loads))
    errors: collections.Counter[int] = sum((load.errors for load in loads), collections.Counter())
    total = sum(load.sent for load in loads)
    figures: dict[str, Any] = {
        "heartbeats_per_s": round(len(latencies) / elapsed),
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 3),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        "load_generator_cpu_share": round(client / (elapsed + _WARMUP), 2),
    }
    if rate is not None:
        figures = {"target_per_s": round(rate), **figures}
    if pid is not None:
        figures["server_cpu_us_per_heartbeat"] = round(cpu * 1e6 / total, 1)
    if errors:
        figures["errors"] = {str(code): n for code, n in errors.items()}
    return figures


async def measure(bootstrap: str, pid: int | None, args: argparse.Namespace) -> dict[str, Any]:
    host, port_text = bootstrap.rsplit(":", 1)
    port = int(port_text)
    assert host == "127.0.0.1", host  # form_group connects to 127.0.0.1
    started = time.perf_counter()
    connecting = asyncio.Semaphore(16)
    formed = await asyncio.gather(
        *(
            form_group(port, f"hb-{g}", args.members, **MOCK_COMPATIBLE, connecting=connecting)
            for g in range(args.groups)
        )
    )
    forming = time.perf_counter() - started
    members = list(itertools.chain.from_iterable(m for m, _ in formed))
    if not args.keep_member_connections:
        await asyncio.gather(*(m.conn.close() for m in members))
    try:
        saturated = await heartbeat_phase(host, port, members, args, None, pid)
        half = await heartbeat_phase(
            host, port, members, args, saturated["heartbeats_per_s"] / 2, pid
        )
    finally:
        await asyncio.gather(*(m.conn.close() for m in members))
    return {"forming_s": round(forming, 2), "saturated": saturated, "half": half}


async def run(args: argparse.Namespace) -> None:
    result: dict[str, Any] = {
        "bench": "heartbeats",
        "groups": args.groups,
        "members_per_group": args.members,
        "connections": args.connections,
        "in_flight": args.in_flight,
        "seconds": args.seconds,
        "member_connections_open": args.keep_member_connections,
    }
    if "mock" in args.servers:
        mock = MockCluster().start()
        try:
            result["mock"] = await measure(mock.bootstrap, mock.pid, args)
        finally:
            mock.stop()
    if "kgroups" in args.servers:
        if args.kgroups_bootstrap:
            result["kgroups"] = await measure(args.kgroups_bootstrap, None, args)
        else:
            data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
            broker = BrokerProcess(data).start()
            assert broker.proc is not None
            try:
                result["kgroups"] = await measure(broker.bootstrap, broker.proc.pid, args)
            finally:
                broker.stop()
    if "mock" in result and "kgroups" in result:
        kg, mock_figures = result["kgroups"], result["mock"]
        result["ratio_kgroups_to_mock"] = {
            "saturated_heartbeats_per_s": round(
                kg["saturated"]["heartbeats_per_s"] / mock_figures["saturated"]["heartbeats_per_s"],
                3,
            ),
            "half_load_p99": round(kg["half"]["p99_ms"] / mock_figures["half"]["p99_ms"], 3),
        }
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--connections", type=int, default=3)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument(
        "--keep-member-connections",
        action="store_true",
        help="keep each member's own connection open, idle, during the heartbeats",
    )
    ap.add_argument("--servers", default="mock,kgroups", help="comma-separated: mock, kgroups")
    ap.add_argument("--kgroups-bootstrap", help="measure this broker instead of a subprocess")
    args = ap.parse_args()
    args.servers = args.servers.split(",")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
