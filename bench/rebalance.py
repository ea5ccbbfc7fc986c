"""Group coordinator benchmarks against a `kgroups serve` subprocess.

- rebalance latency: N members (own connection each) join one group at once
  (group.initial.rebalance.delay.ms=0), the leader assigns, and the clock stops
  when every member has its SyncGroup answer;
- steady heartbeats/s for G groups x M members, with p50/p99 latency;
- broker resident memory per 1,000 members.

Prints one JSON object per figure. Usage:

    .venv/bin/python bench/rebalance.py [--sizes 10,100,1000,5000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import statistics
import struct
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from kio.schema.find_coordinator.v3 import FindCoordinatorRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment
from kio.schema.types import GroupId
from kio.serial import entity_writer
from kio.static.primitive import i8, i32, i32Timedelta

from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from process_broker import BrokerProcess

SESSION = i32Timedelta.parse(timedelta(seconds=30))
REBALANCE = i32Timedelta.parse(timedelta(seconds=120))
# A consumer-protocol assignment of no partitions (version 0, no topics, null
# user data): librdkafka's mock answers an empty one as null, which is invalid.
NO_PARTITIONS = b"\x00\x00" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"


class BenchMember:
    def __init__(
        self, conn: BrokerConnection, group: str, join_version: int = 9, sync_version: int = 5
    ) -> None:
        self.conn = conn
        self.group = group
        self.join_version = join_version
        self.sync_version = sync_version
        self.member_id = ""
        self.generation = -1

    async def join(self) -> tuple[bool, list[str]]:
        while True:
            r = await self.conn.send(
                JoinGroupRequest(
                    group_id=GroupId(self.group),
                    session_timeout=SESSION,
                    rebalance_timeout=REBALANCE,
                    member_id=self.member_id,
                    protocol_type="consumer",
                    protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00"),),
                ),
                version=self.join_version,
            )
            if r.error_code == ErrorCode.member_id_required:
                self.member_id = r.member_id
                continue
            assert r.error_code == ErrorCode.none, r.error_code
            self.member_id, self.generation = r.member_id, r.generation_id
            return r.leader == r.member_id, [m.member_id for m in r.members]

    async def sync(self, members: list[str]) -> ErrorCode:
        r = await self.conn.send(
            SyncGroupRequest(
                group_id=GroupId(self.group),
                generation_id=i32(self.generation),
                member_id=self.member_id,
                protocol_type="consumer",
                protocol_name="range",
                assignments=tuple(
                    SyncGroupRequestAssignment(member_id=m, assignment=NO_PARTITIONS)
                    for m in members
                ),
            ),
            version=self.sync_version,
        )
        return r.error_code  # type: ignore[no-any-return]

    async def heartbeat_error(self) -> ErrorCode:
        r = await self.conn.send(
            HeartbeatRequest(
                group_id=GroupId(self.group),
                generation_id=i32(self.generation),
                member_id=self.member_id,
            )
        )
        return r.error_code  # type: ignore[no-any-return]


async def form_group(
    port: int,
    group: str,
    n: int,
    join_version: int = 9,
    sync_version: int = 5,
    leader_sync_delay: float = 0.0,
    connecting: asyncio.Semaphore | None = None,
) -> tuple[list[BenchMember], float]:
    async def connect(i: int) -> BrokerConnection:
        # librdkafka's mock listens with a short backlog: bound concurrent connects there.
        async with connecting or contextlib.nullcontext():
            return await BrokerConnection.open("127.0.0.1", port, client_id=f"b{i}")

    conns = await asyncio.gather(*(connect(i) for i in range(n)))
    await conns[0].send(FindCoordinatorRequest(key=group, key_type=i8(0)))
    members = [BenchMember(c, group, join_version, sync_version) for c in conns]
    synced: dict[int, int] = {}
    done = asyncio.Event()
    started = time.perf_counter()

    async def one(m: BenchMember) -> None:
        # What a client does: join, sync, and rejoin when told the group rebalances.
        while not done.is_set():
            leader, all_members = await m.join()
            if leader:
                # librdkafka's mock ends the sync with the leader's SyncGroup and
                # refuses a follower's that comes later: there, followers go first.
                await asyncio.sleep(leader_sync_delay)
            error = await m.sync(all_members if leader else [])
            if error == ErrorCode.rebalance_in_progress:
                continue
            assert error == ErrorCode.none, error
            synced[m.generation] = synced.get(m.generation, 0) + 1
            if synced[m.generation] == n:
                done.set()
            while not done.is_set():
                await asyncio.sleep(0.2)
                if await m.heartbeat_error() == ErrorCode.rebalance_in_progress:
                    break

    await asyncio.gather(*(one(m) for m in members))
    return members, time.perf_counter() - started


async def raw_heartbeats(
    port: int, members: list[BenchMember], seconds: float
) -> tuple[list[float], float]:
    """Each member heartbeats back to back on its own connection. Requests are
    encoded once and answers only checked for their error code, so the load
    generator costs little next to the broker it measures."""
    frames = []
    for m in members:
        body = io.BytesIO()
        entity_writer(HeartbeatRequest)(
            body,
            HeartbeatRequest(
                group_id=GroupId(m.group), generation_id=i32(m.generation), member_id=m.member_id
            ),
        )
        header = struct.pack(">hhih", 12, 4, 1, 2) + b"hb" + b"\x00"
        payload = header + body.getvalue()
        frames.append(struct.pack(">i", len(payload)) + payload)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def member_loop(frame: bytes) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < deadline:
                sent = time.perf_counter()
                writer.write(frame)
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                response = await reader.readexactly(size)
                # correlation id (4), tagged fields (1), throttle (4), error code (2)
                (error,) = struct.unpack_from(">h", response, 9)
                assert error == 0, error
                latencies.append(time.perf_counter() - sent)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(member_loop(f) for f in frames))
    return sorted(latencies), time.perf_counter() - started


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    broker = BrokerProcess(data, None, "group.max.session.timeout.ms=1800000").start()
    assert broker.proc is not None
    try:
        # Memory first, on a fresh broker (later phases leave freed memory behind),
        # after a warm-up group has created `__consumer_offsets`.
        warmup, _ = await form_group(broker.port, "warmup", 10)
        await asyncio.gather(*(m.conn.close() for m in warmup))
        rss_before = rss_kb(broker.proc.pid)
        groups = []
        for g in range(args.groups):
            members, _ = await form_group(broker.port, f"hb-{g}", args.members)
            groups.extend(members)
        rss_after = rss_kb(broker.proc.pid)
        for m in groups:
            await m.conn.close()
        latencies, elapsed = await raw_heartbeats(broker.port, groups, args.seconds)
        print(
            json.dumps(
                {
                    "bench": "heartbeats",
                    "groups": args.groups,
                    "members_per_group": args.members,
                    "heartbeats_per_s": round(len(latencies) / elapsed),
                    "p50_ms": round(statistics.median(latencies) * 1000, 3),
                    "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
                }
            )
        )
        members_total = args.groups * args.members
        print(
            json.dumps(
                {
                    "bench": "memory",
                    "members": members_total,
                    "rss_kb_per_1000_members": round(
                        (rss_after - rss_before) * 1000 / members_total
                    ),
                }
            )
        )
        for n in args.sizes:
            members, seconds = await form_group(broker.port, f"rebalance-{n}", n)
            print(json.dumps({"bench": "rebalance", "members": n, "seconds": round(seconds, 3)}))
            await asyncio.gather(*(m.conn.close() for m in members))

    finally:
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000,5000")
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
