"""ConsumerGroupHeartbeats/s and latency of one KIP-848 group, beside classic heartbeats.

Against one `kgroups serve` subprocess (ephemeral port, temporary data dir), in
one run:

- consumer protocol: M members (default 1,000) join one group subscribed to a
  topic of P partitions (default 1,000) with ConsumerGroupHeartbeat v0 over C
  connections, then heartbeat with the partitions they were given (acknowledging
  revocations) until every member is at the group's epoch and nothing moves.
  Then, steady state, every member's heartbeat as clients send it when nothing
  changed (group, member id, epoch; every other field null or -1), encoded
  once, goes round-robin over the C connections, each keeping W requests in
  flight: saturation, then half of that rate (bench/heartbeats.py's phases);
- classic, the anchor: one group of the same M members formed with
  JoinGroup/SyncGroup, then Heartbeat v4 the same way (bench/heartbeats.py).

Prints one JSON object. Usage:

    .venv/bin/python bench/consumer_heartbeats.py [--members 1000] [--partitions 1000]
        [--connections 3] [--in-flight 64] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import struct
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v0.request import TopicPartitions
from kio.schema.create_topics.v5 import CreateTopicsRequest
from kio.schema.create_topics.v5.request import CreatableTopic
from kio.schema.types import GroupId, TopicName
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i32Timedelta

from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import heartbeats

from process_broker import BrokerProcess

GROUP = "kip848-bench"
TOPIC = "kip848-bench"
REBALANCE_TIMEOUT = i32Timedelta.parse(timedelta(minutes=5))
_write_request = entity_writer(ConsumerGroupHeartbeatRequest)
_HEADER = struct.Struct(">ihhih")  # size, api key, version, correlation, client id length


class ConsumerMember:
    """A KIP-848 member that owns what it was last given, at once."""

    def __init__(self, conn: BrokerConnection) -> None:
        self.conn = conn
        self.member_id = ""
        self.epoch = 0
        self.owned: tuple[TopicPartitions, ...] = ()

    async def heartbeat(self, joining: bool = False) -> bool:
        """One full heartbeat; True when the answer changed the member's
        epoch or assignment."""
        r = await self.conn.send(
            ConsumerGroupHeartbeatRequest(
                group_id=GroupId(GROUP),
                member_id=self.member_id,
                member_epoch=i32(self.epoch),
                rebalance_timeout=REBALANCE_TIMEOUT,
                subscribed_topic_names=(TopicName(TOPIC),) if joining else None,
                topic_partitions=self.owned,
            )
        )
        assert r.error_code == ErrorCode.none, (r.error_code, r.error_message)
        changed = r.member_epoch != self.epoch or r.assignment is not None
        self.member_id, self.epoch = r.member_id, r.member_epoch
        if r.assignment is not None:
            self.owned = tuple(
                TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                for t in r.assignment.topic_partitions
            )
        return changed


def steady_frame(member: ConsumerMember, correlation: int) -> bytes:
    """ConsumerGroupHeartbeat v0 as a stable member sends it: nothing changed."""
    body = io.BytesIO()
    _write_request(
        body,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId(GROUP),
            member_id=member.member_id,
            member_epoch=i32(member.epoch),
            topic_partitions=None,
        ),
    )
    client = b"hb"
    payload = body.getvalue()
    size = 10 + len(client) + 1 + len(payload)
    return _HEADER.pack(size, 68, 0, correlation, len(client)) + client + b"\x00" + payload


async def form_consumer_group(port: int, args: argparse.Namespace) -> list[ConsumerMember]:
    conns = [
        await BrokerConnection.open("127.0.0.1", port, client_id=f"c{i}")
        for i in range(args.connections)
    ]
    created = await conns[0].send(
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(TOPIC),
                    num_partitions=i32(args.partitions),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=i32Timedelta.parse(timedelta(seconds=60)),
            validate_only=False,
        )
    )
    assert created.topics[0].error_code == ErrorCode.none, created.topics[0]
    members = [ConsumerMember(conns[i % len(conns)]) for i in range(args.members)]
    await asyncio.gather(*(m.heartbeat(joining=True) for m in members))
    for _ in range(100):
        changes = await asyncio.gather(*(m.heartbeat() for m in members))
        if not any(changes) and len({m.epoch for m in members}) == 1:
            break
    else:
        raise RuntimeError("the group did not settle")
    assigned = sum(len(t.partitions) for m in members for t in m.owned)
    assert assigned == args.partitions, assigned
    return members


async def measure_consumer(bootstrap: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    port = int(bootstrap.rsplit(":", 1)[1])
    started = time.perf_counter()
    members = await form_consumer_group(port, args)
    forming = time.perf_counter() - started
    try:
        saturated = await heartbeats.heartbeat_phase(
            "127.0.0.1", port, members, args, None, pid, steady_frame
        )
        half = await heartbeats.heartbeat_phase(
            "127.0.0.1", port, members, args, saturated["heartbeats_per_s"] / 2, pid, steady_frame
        )
    finally:
        for conn in {m.conn for m in members}:
            await conn.close()
    return {"forming_s": round(forming, 2), "saturated": saturated, "half": half}


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    broker = BrokerProcess(data).start()
    assert broker.proc is not None
    pid = broker.proc.pid
    result: dict[str, Any] = {
        "bench": "consumer_heartbeats",
        "members": args.members,
        "partitions": args.partitions,
        "connections": args.connections,
        "in_flight": args.in_flight,
        "seconds": args.seconds,
    }
    try:
        result["consumer"] = await measure_consumer(broker.bootstrap, pid, args)
        # heartbeats.measure forms `groups` x `members` classic groups: one of M.
        classic = argparse.Namespace(**vars(args), groups=1, keep_member_connections=False)
        result["classic"] = await heartbeats.measure(broker.bootstrap, pid, classic)
    finally:
        broker.stop()
    consumer, classic_figures = result["consumer"], result["classic"]
    result["ratio_consumer_to_classic"] = {
        "saturated_heartbeats_per_s": round(
            consumer["saturated"]["heartbeats_per_s"]
            / classic_figures["saturated"]["heartbeats_per_s"],
            3,
        ),
        "server_cpu_per_heartbeat": round(
            consumer["saturated"]["server_cpu_us_per_heartbeat"]
            / classic_figures["saturated"]["server_cpu_us_per_heartbeat"],
            3,
        ),
    }
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=3)
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5)
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
