"""The set of clients a fault run starts. A workload is anything with a name
and `run(stop)`: it works against the cluster, recording into the history,
until `stop` is set, then closes its client. Each runs on its own thread.

The standard set, on one topic:

- idempotent producers: two librdkafka, one kgroups;
- a classic-protocol group of two librdkafka members (cooperative-sticky);
- a consumer-protocol (KIP-848) group of a librdkafka and a kgroups member;
- a read_committed reader of every partition, outside any group;
- an observer of both groups' committed offsets.

- a consume-transform-produce loop in a third classic group: two
  transformers (faults/transactions.py) reading the topic and writing to
  an output topic in transactions, exactly once;
- a read_committed reader of every partition of the output topic.

The transactional part plugs in through `transactional` (None leaves it
out). It records each transaction as one `txn` operation, ok {"values":
[[partition, value], ...], "outcome": "commit" | "abort"}; the checker then
requires every committed value in the final read, exactly one committed
output per input consumed, lets offsets of the output topic have gaps (the
markers), and fails any read_committed consumer that returned an aborted
value. Its reads and commits are recorded like a group member's (poll,
commit).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from faults.consumers import CommitObserver, ConfluentMember, ConfluentReader, KgroupsMember
from faults.history import History
from faults.producers import ConfluentProducer, KgroupsProducer
from faults.transactions import ConfluentTransformer

TOPIC = "faults"
PARTITIONS = 4
CLASSIC_GROUP = "classic"
CONSUMER_GROUP = "consumer"
OUTPUT = "faults-out"  # written in transactions
TXN_GROUP = "transform"
TOPICS = (TOPIC, OUTPUT)


class Workload(Protocol):
    name: str

    def run(self, stop: threading.Event) -> None: ...


def transforming(bootstrap: str, history: History, seed: int) -> list[Workload]:
    return [
        ConfluentTransformer("transform-1", bootstrap, TOPIC, OUTPUT, TXN_GROUP, history, seed + 5),
        ConfluentTransformer("transform-2", bootstrap, TOPIC, OUTPUT, TXN_GROUP, history, seed + 6),
        ConfluentReader("reader-out", bootstrap, OUTPUT, PARTITIONS, history),
    ]


# (bootstrap, history, seed) -> the transactional workloads.
TransactionalFactory = Callable[[str, History, int], list[Workload]]
transactional: TransactionalFactory | None = transforming


def standard(bootstrap: str, history: History, seed: int) -> list[Workload]:
    workloads: list[Workload] = [
        ConfluentProducer("producer-1", bootstrap, TOPIC, PARTITIONS, history, seed + 1),
        ConfluentProducer("producer-2", bootstrap, TOPIC, PARTITIONS, history, seed + 2),
        KgroupsProducer("producer-k", bootstrap, TOPIC, PARTITIONS, history, seed + 3),
        ConfluentMember("classic-1", bootstrap, TOPIC, CLASSIC_GROUP, "classic", history),
        ConfluentMember("classic-2", bootstrap, TOPIC, CLASSIC_GROUP, "classic", history),
        ConfluentMember("consumer-1", bootstrap, TOPIC, CONSUMER_GROUP, "consumer", history),
        KgroupsMember("consumer-k", bootstrap, TOPIC, CONSUMER_GROUP, "consumer", history),
        ConfluentReader("reader", bootstrap, TOPIC, PARTITIONS, history),
        CommitObserver(
            "observer", bootstrap, TOPIC, [CLASSIC_GROUP, CONSUMER_GROUP], history, seed + 4
        ),
    ]
    if transactional is not None:
        workloads += transactional(bootstrap, history, seed)
    return workloads


def unfenced(workloads: list[Workload]) -> frozenset[str]:
    """The group members whose client keeps its partitions while it cannot
    reach the coordinator: librdkafka's consumer-protocol members, which have
    no session timeout of their own (the checker's ``unfenced``)."""
    return frozenset(
        w.name for w in workloads if isinstance(w, ConfluentMember) and w.protocol == "consumer"
    )
