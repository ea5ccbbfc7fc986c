"""How fast a stable consumer group takes on 900 new partitions, per group protocol.

KIP-848's headline case. Against a `kgroups serve` subprocess (the test broker's
settings: Kafka's, with group.initial.rebalance.delay.ms=0; ephemeral port,
temporary data dir), for each protocol in turn:

- 10 confluent-kafka consumers, each polling in its own thread, form one group
  subscribed to two topics: `base` (10 partitions, one per member) and `burst`,
  which does not exist yet;
- once every member holds one `base` partition, `burst` is created with 900
  partitions (kgroups does not serve CreatePartitions, so the new partitions
  come as a new topic of the subscription) and one record is produced to each;
- the clock runs from the CreateTopics request until every `burst` partition
  is in some member's assignment (`assigned_s`) and until every one of the 900
  records has been read (`consumed_s`).

Protocols: `consumer` (KIP-848, group.protocol=consumer: the broker notices the
topic and hands each member its share on its next heartbeat), and classic with
`cooperative-sticky` and with eager `range` (the group leader notices the topic
in its metadata, every member rejoins, the leader assigns). The classic members
refresh their metadata every `--metadata-refresh-ms` (librdkafka's default is
5 minutes, which would measure only that interval).

Prints one JSON line per protocol. Usage:

    .venv/bin/python bench/absorb.py [--members 10] [--partitions 900]
        [--protocols consumer,cooperative-sticky,range] [--metadata-refresh-ms 1000]
        [--override key=value ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from process_broker import BrokerProcess

# Errors a consumer reports while `burst` does not exist yet.
_EXPECTED = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


class PollingMember(threading.Thread):
    """One consumer polling in its own thread; remembers the `burst`
    partitions it read a record from."""

    def __init__(self, config: dict[str, Any], topics: list[str], burst: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(config)
        self.consumer.subscribe(topics)
        self.burst = burst
        self.read: set[int] = set()
        self.errors: list[str] = []
        # Read in this thread only: librdkafka answers assignment() through
        # its main thread, which a caller in another thread can wait on long.
        self.assigned: list[tuple[str, int]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            message = self.consumer.poll(0.1)
            self.assigned = [(tp.topic, tp.partition) for tp in self.consumer.assignment()]
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() not in _EXPECTED:
                    self.errors.append(str(error))
                continue
            if message.topic() == self.burst:
                self.read.add(message.partition())

    def stop(self) -> None:
        self.stopping.set()
        self.join()
        self.consumer.close()


def wait_for(condition: Any, timeout: float, what: str, step: float = 0.01) -> float:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(step)
    return time.perf_counter()


def measure(bootstrap: str, protocol: str, args: argparse.Namespace) -> dict[str, Any]:
    base, burst, group = f"base-{protocol}", f"burst-{protocol}", f"absorb-{protocol}"
    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(base, args.members, 1)])[base].result(30)
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config["partition.assignment.strategy"] = protocol
        config["topic.metadata.refresh.interval.ms"] = args.metadata_refresh_ms
    members = [PollingMember(config, [base, burst], burst) for _ in range(args.members)]
    for member in members:
        member.start()
    try:
        formed = time.perf_counter()
        wait_for(
            lambda: all(len(m.assigned) == 1 for m in members),
            args.timeout,
            "one base partition each",
        )
        forming = time.perf_counter() - formed
        time.sleep(args.settle)

        def assigned() -> int:
            return len({p for m in members for t, p in m.assigned if t == burst})

        def consumed() -> int:
            return len(set().union(*(m.read for m in members)))

        started = time.perf_counter()
        admin.create_topics([NewTopic(burst, args.partitions, 1)])[burst].result(60)
        created = time.perf_counter()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for partition in range(args.partitions):
            producer.produce(burst, value=b"x", partition=partition)
        assert producer.flush(60) == 0
        produced = time.perf_counter()
        all_assigned = wait_for(
            lambda: assigned() == args.partitions, args.timeout, "every new partition assigned"
        )
        all_consumed = wait_for(
            lambda: consumed() == args.partitions, args.timeout, "a record from each"
        )
        shares = sorted(len(m.assigned) for m in members)
        errors = [e for m in members for e in m.errors]
    finally:
        closing = [threading.Thread(target=m.stop) for m in members]
        for thread in closing:
            thread.start()
        for thread in closing:
            thread.join()
    figures: dict[str, Any] = {
        "bench": "absorb",
        "protocol": protocol if protocol == "consumer" else f"classic/{protocol}",
        "members": args.members,
        "new_partitions": args.partitions,
        "forming_s": round(forming, 2),
        "create_topic_s": round(created - started, 2),
        "produce_s": round(produced - created, 2),
        "assigned_s": round(all_assigned - started, 2),
        "consumed_s": round(all_consumed - started, 2),
        "partitions_per_member": [shares[0], shares[-1]],
    }
    if errors:
        figures["errors"] = errors[:5]
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=900)
    ap.add_argument("--protocols", default="consumer,cooperative-sticky,range")
    ap.add_argument("--metadata-refresh-ms", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=2.0, help="seconds of a stable group first")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--override", action="append", default=[], help="broker key=value")
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="kgbench.")) / "data"
    broker = BrokerProcess(data, None, *args.override).start()
    try:
        for protocol in args.protocols.split(","):
            print(json.dumps(measure(broker.bootstrap, protocol, args)), flush=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
