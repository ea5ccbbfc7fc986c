"""Failover under load: brokers of a cluster killed, paused, or cut off from
their store while clients commit and produce, seen through the clients."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cluster_brokers import (
    SESSION_MS,
    create_topic,
    fetch,
    leaders,
    produce,
    running_cluster,
    wait_for,
)

from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError
from kgroups.postgres_store.local_server import LocalPostgres

GROUP = "committer"
RECORDS = 3000  # per partition, more than the committer can commit meanwhile


class Committer(threading.Thread):
    """Commits 1, 2, 3, ... for both partitions of `t`, one at a time, and
    records every acknowledged one. After a failed commit, the first answer
    it gets is a read of the committed offsets, kept in `after_failures`
    beside the last acknowledgement before it."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.acked: list[int] = []
        self.after_failures: list[tuple[int, dict[tuple[str, int], int]]] = []
        self.failures = 0
        self.done = threading.Event()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        admin = Admin(self.bootstrap)
        offset, failed = 0, False
        while not self.done.is_set():
            try:
                if failed:
                    seen = await admin.committed(GROUP)
                    self.after_failures.append((self.acked[-1] if self.acked else 0, seen))
                    failed = False
                offset += 1
                await admin.commit(GROUP, {("t", 0): offset, ("t", 1): offset})
                self.acked.append(offset)
            except (TimeoutError, KafkaError, OSError):
                self.failures += 1
                failed = True
                await admin.close()
                admin = Admin(self.bootstrap)
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.005)
        await admin.close()


def _coordinator(bootstrap: str) -> int:
    async def find() -> int:
        admin = Admin(bootstrap)
        try:
            found = (await admin.find_coordinators([GROUP]))[GROUP]
        finally:
            await admin.close()
        if isinstance(found, KafkaError):
            raise found
        return found[0]

    result: list[int] = []

    def ready() -> bool:
        try:
            result.append(asyncio.run(find()))
        except (KafkaError, OSError):
            return False
        return True

    wait_for(ready, 20)
    return result[-1]


def test_killing_the_coordinator_during_commits_keeps_every_acknowledged_offset(
    tmp_path: Path, store_url: str
) -> None:
    from confluent_kafka import Consumer, Producer

    with running_cluster(tmp_path, store_url, 3) as brokers:
        bootstrap = ",".join(b.bootstrap for b in brokers)
        assert create_topic(brokers[0].port, "t", 2) == ErrorCode.none
        leaders(brokers[0].port, "t")
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        for i in range(RECORDS):
            for p in (0, 1):
                producer.produce("t", f"{p}-{i}".encode(), partition=p)
        assert producer.flush(30) == 0

        committer = Committer(bootstrap)
        committer.start()
        try:
            wait_for(lambda: len(committer.acked) >= 20)
            victim = _coordinator(bootstrap)
            brokers[victim - 1].kill()
            acked_at_kill = len(committer.acked)
            # Commits go on through the new coordinator.
            wait_for(lambda: len(committer.acked) >= acked_at_kill + 20, SESSION_MS / 1000 + 15)
        finally:
            committer.done.set()
            committer.join(20)
        assert any(last > 0 for last, _seen in committer.after_failures)
        # Never behind an acknowledgement, read right after the move.
        for last_acked, seen in committer.after_failures:
            assert all(seen.get(("t", p), 0) >= last_acked for p in (0, 1)), (last_acked, seen)
        survivors = [b for i, b in enumerate(brokers, 1) if i != victim]
        assert _coordinator(survivors[0].bootstrap) != victim
        last = committer.acked[-1]
        assert last < RECORDS

        # Members of a group resume exactly there: nothing skipped, nothing before.
        consumers = [
            Consumer(
                {
                    "bootstrap.servers": ",".join(b.bootstrap for b in survivors),
                    "group.id": GROUP,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
            for _ in range(2)
        ]
        seen_offsets: dict[int, list[int]] = defaultdict(list)
        try:
            for c in consumers:
                c.subscribe(["t"])

            def consumed_to_the_end() -> bool:
                for c in consumers:
                    for m in c.consume(500, 0.1):
                        assert m.error() is None, m.error()
                        assert m.value() == f"{m.partition()}-{m.offset()}".encode()
                        seen_offsets[m.partition()].append(m.offset())
                return all(seen_offsets[p] and seen_offsets[p][-1] == RECORDS - 1 for p in (0, 1))

            wait_for(consumed_to_the_end, 30)
        finally:
            for c in consumers:
                c.close()
        for p in (0, 1):
            assert seen_offsets[p] == list(range(last, RECORDS)), p


def test_a_paused_leader_under_load_never_shares_a_partition_and_gets_its_share_back(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(tmp_path, store_url, 2) as (a, b):
        assert create_topic(a.port, "t", 4) == ErrorCode.none
        wait_for(lambda: Counter(leaders(a.port, "t").values()) == Counter({1: 2, 2: 2}))
        acked: list[tuple[int, int, bytes]] = []  # partition, offset, value
        stop = threading.Event()

        def load(port: int, partition: int) -> None:
            # Every partition is written through both brokers: whichever accepts.
            i = 0
            while not stop.is_set():
                value = f"{port}-{partition}-{i}".encode()
                i += 1
                try:
                    error, offset = produce(port, "t", partition, value)
                except OSError:
                    continue
                if error == ErrorCode.none:
                    acked.append((partition, offset, value))
                else:
                    time.sleep(0.02)

        assert b.proc is not None
        with ThreadPoolExecutor(8) as pool:
            jobs = [pool.submit(load, broker.port, p) for broker in (a, b) for p in range(4)]
            try:
                time.sleep(1)
                b.proc.send_signal(signal.SIGSTOP)
                wait_for(lambda: set(leaders(a.port, "t").values()) == {1}, SESSION_MS / 1000 + 10)
                time.sleep(1)
                b.proc.send_signal(signal.SIGCONT)
                # Back from the pause, B registers again and gets its share back.
                wait_for(lambda: Counter(leaders(a.port, "t").values()) == Counter({1: 2, 2: 2}))
                time.sleep(1)
            finally:
                b.proc.send_signal(signal.SIGCONT)
                stop.set()
            for job in jobs:
                job.result(30)
        by_partition: dict[int, dict[int, bytes]] = defaultdict(dict)
        for partition, offset, value in acked:
            assert offset not in by_partition[partition], (partition, offset)
            by_partition[partition][offset] = value
        current = leaders(a.port, "t")
        ports = {1: a.port, 2: b.port}
        for partition, written in by_partition.items():
            values = _read_all(ports[current[partition]], partition)
            for offset, value in written.items():
                assert values[offset] == value, (partition, offset)
        # Both brokers took writes, and B's partitions kept taking them across the move.
        assert {v.split(b"-")[0] for _p, _o, v in acked} == {
            str(a.port).encode(),
            str(b.port).encode(),
        }


def _read_from_leader(port: int, ports: dict[int, int], partition: int) -> dict[int, bytes]:
    """The partition's records, read again from its new leader if it moves
    meanwhile (brokers coming back even the spread at their next turn)."""
    found: dict[int, bytes] = {}

    def read() -> bool:
        leader = ports[leaders(port, "t")[partition]]
        try:
            found.update(_read_all(leader, partition))
        except AssertionError:  # NOT_LEADER_OR_FOLLOWER: it moved on
            found.clear()
            return False
        return True

    wait_for(read, 20)
    return found


def _read_all(port: int, partition: int) -> dict[int, bytes]:
    values: dict[int, bytes] = {}
    offset = 0
    while True:
        error, batch = fetch(port, "t", partition, offset)
        assert error == ErrorCode.none
        if not batch:
            return values
        for v in batch:
            values[offset] = v
            offset += 1


def test_a_store_restart_answers_errors_meanwhile_and_loses_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    from postgres import start_in_place, stop_in_place

    with LocalPostgres(fsync=False) as server:
        store_url = server.create_database("outage")
        with running_cluster(tmp_path, store_url, 2) as (a, b):
            assert create_topic(a.port, "t", 2) == ErrorCode.none
            current = leaders(a.port, "t")
            ports = {1: a.port, 2: b.port}
            for p in (0, 1):
                wait_for(
                    lambda p=p: produce(ports[current[p]], "t", p, b"before")[0] == ErrorCode.none
                )
            args = stop_in_place(server)
            try:
                # Past the session timeout: every lease runs out meanwhile.
                deadline = time.monotonic() + SESSION_MS / 1000 + 1
                answers: set[int] = set()
                while time.monotonic() < deadline:
                    for port in ports.values():
                        for p in (0, 1):
                            answers.add(produce(port, "t", p, b"during")[0])
                    time.sleep(0.1)
            finally:
                start_in_place(server, args)
            assert ErrorCode.none not in answers
            # REQUEST_TIMED_OUT: the store's answer lost, the write possibly made.
            assert answers <= {
                ErrorCode.request_timed_out,
                ErrorCode.kafka_storage_error,
                ErrorCode.not_leader_or_follower,
            }

            def writable(p: int) -> bool:
                port = ports[leaders(a.port, "t")[p]]
                return produce(port, "t", p, b"after")[0] == ErrorCode.none

            for p in (0, 1):
                wait_for(lambda p=p: writable(p), 30)
            # Each broker evens the spread at one of its turns; a busy machine
            # may delay those by seconds.
            wait_for(lambda: set(leaders(a.port, "t").values()) == {1, 2}, 60)
            for p in (0, 1):
                values = list(_read_from_leader(a.port, ports, p).values())
                assert values[0] == b"before" and b"during" not in values
                assert values[-1] == b"after"


def test_an_aiokafka_group_shares_and_commits_a_topic_led_by_three_brokers(
    tmp_path: Path, store_url: str
) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    with running_cluster(tmp_path, store_url, 3) as brokers:
        bootstrap = brokers[2].bootstrap  # one broker; the others come from Metadata
        assert create_topic(brokers[0].port, "ai", 3) == ErrorCode.none
        wait_for(lambda: set(leaders(brokers[0].port, "ai").values()) == {1, 2, 3})
        sent = {f"v{i}".encode() for i in range(300)}

        async def scenario() -> tuple[list[bytes], list[int], dict[tuple[str, int], int]]:
            members = [
                AIOKafkaConsumer(
                    "ai",
                    bootstrap_servers=bootstrap,
                    group_id="ai",
                    enable_auto_commit=False,
                    auto_offset_reset="earliest",
                )
                for _ in range(2)
            ]
            got: list[bytes] = []
            try:
                for m in members:
                    await m.start()
                # The group settles before any record is sent: each member gets a share.
                deadline = time.monotonic() + 30
                while not all(m.assignment() for m in members):
                    assert time.monotonic() < deadline, "the group did not settle"
                    await asyncio.gather(*(m.getmany(timeout_ms=100) for m in members))
                assignment = sorted(len(m.assignment()) for m in members)
                producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
                await producer.start()
                try:
                    for i, value in enumerate(sorted(sent)):
                        await producer.send("ai", value, partition=i % 3)
                    await producer.flush()
                finally:
                    await producer.stop()
                while len(got) < len(sent) and time.monotonic() < deadline:
                    for m in members:
                        batches = await m.getmany(timeout_ms=200)
                        got += [r.value for rs in batches.values() for r in rs if r.value]
                        if batches:
                            await m.commit()
            finally:
                for m in members:
                    await m.stop()
            admin = Admin(bootstrap)
            try:
                committed = await admin.committed("ai")
            finally:
                await admin.close()
            return got, assignment, committed

        got, assignment, committed = asyncio.run(scenario())
        assert assignment == [1, 2]
        assert sorted(got) == sorted(sent)
        assert committed == {("ai", p): 100 for p in range(3)}
