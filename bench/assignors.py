"""Partition assignors: kgroups beside kafka-python on the same groups.

For every case and assignor, prints one JSON object: the seconds each takes to
assign a fresh group (round 1), and then (round 2) to reassign after one
member leaves, with the remaining members reporting what they got the way the
assignor expects (sticky: user data; cooperative-sticky: owned partitions and
generation). ``moved`` counts partitions taken from members that stayed: 0 is
perfectly sticky. ``ratio`` is kafka-python's time over ours. Usage:

    .venv/bin/python bench/assignors.py [--cases a,b,c,d,e] [--assignors sticky,...]

kafka-python's sticky assignors are left out above 10,000 partitions (they
take about 15 s at 10,000 x 1,000 already and grow faster than linearly); the
JSON says so where that happens.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))

from assignors.kafka_python_group import KafkaPythonCluster, KafkaPythonMember
from kafka.coordinator.assignors.cooperative_sticky import (
    CooperativeStickyAssignor as KafkaPythonCooperativeSticky,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from kgroups.assignors import Assignment, Subscription, TopicPartition, by_name
from kgroups.assignors.sticky_user_data import encode_sticky_user_data

KAFKA_PYTHON = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": KafkaPythonCooperativeSticky,
}
KAFKA_PYTHON_STICKY_LIMIT = 10_000
GENERATION = 1


@dataclass
class Case:
    name: str
    topics: int
    partitions_per_topic: int
    consumers: int
    topics_per_consumer: int | None  # None: every consumer subscribes to every topic

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    def group(self) -> tuple[dict[str, int], dict[str, list[str]]]:
        topics = {f"topic-{i:04d}": self.partitions_per_topic for i in range(self.topics)}
        names = list(topics)
        chooser = random.Random(self.name)
        subscriptions = {
            f"consumer-{i:05d}": (
                names
                if self.topics_per_consumer is None
                else sorted(chooser.sample(names, self.topics_per_consumer))
            )
            for i in range(self.consumers)
        }
        return topics, subscriptions


CASES = {
    "a": Case("a", 20, 100, 200, None),
    "b": Case("b", 100, 100, 1_000, None),
    "c": Case("c", 1_000, 1_000, 2_000, None),
    "d": Case("d", 40, 50, 200, 10),
    "e": Case("e", 200, 50, 1_000, 20),
}


def best_time(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
        if best > 2:
            break  # slow enough that one run says it
    return best, result


# -- kgroups -----------------------------------------------------------------


def ours_round1(name: str, topics: Mapping[str, int], subs: Mapping[str, list[str]]) -> Any:
    subscriptions = {m: Subscription(list(t)) for m, t in subs.items()}
    return lambda: by_name(name).assign(topics, subscriptions)


def ours_round2(
    name: str,
    topics: Mapping[str, int],
    subs: Mapping[str, list[str]],
    previous: Mapping[str, Assignment],
) -> Any:
    subscriptions = {}
    for member_id, member_topics in subs.items():
        owned = previous[member_id].partitions
        if name == "sticky":
            subscriptions[member_id] = Subscription(
                list(member_topics), user_data=encode_sticky_user_data(owned, GENERATION)
            )
        elif name == "cooperative-sticky":
            subscriptions[member_id] = Subscription(
                list(member_topics), owned_partitions=list(owned), generation_id=GENERATION
            )
        else:
            subscriptions[member_id] = Subscription(list(member_topics))
    return lambda: by_name(name).assign(topics, subscriptions)


# -- kafka-python --------------------------------------------------------------


def theirs(
    name: str,
    topics: Mapping[str, int],
    subs: Mapping[str, list[str]],
    previous: Mapping[str, Assignment] | None = None,
) -> Any:
    members = []
    for member_id, member_topics in subs.items():
        owned = previous[member_id].partitions if previous else []
        by_topic: dict[str, list[int]] = {}
        for topic, partition in owned:
            by_topic.setdefault(topic, []).append(partition)
        fields: dict[str, Any] = {"topics": list(member_topics), "user_data": b""}
        version = 0
        if previous and name == "sticky":
            fields["user_data"] = StickyAssignorUserData(list(by_topic.items()), GENERATION)
        elif previous and name == "cooperative-sticky":
            version = 2
            fields["owned_partitions"] = [
                ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
                for t, ps in by_topic.items()
            ]
            fields["generation_id"] = GENERATION
        members.append(
            KafkaPythonMember(member_id, None, ConsumerProtocolSubscription(version, **fields))
        )
    cluster = KafkaPythonCluster(topics)
    assignor = KAFKA_PYTHON[name]

    def run() -> dict[str, Assignment]:
        result = assignor().assign(cluster, members)
        return {
            m: Assignment([TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps])
            for m, a in result.items()
        }

    return run


# -- the report ------------------------------------------------------------------


def moved(before: Mapping[str, Assignment], after: Mapping[str, Assignment]) -> int:
    """Partitions taken away from members present in both rounds."""
    return sum(
        len(set(before[m].partitions) - set(after[m].partitions)) for m in after if m in before
    )


def measure(case: Case, name: str) -> dict[str, Any]:
    topics, subs = case.group()
    repeats = 3 if case.partitions <= 10_000 else 1
    leaving = sorted(subs)[len(subs) // 2]
    remaining = {m: t for m, t in subs.items() if m != leaving}

    ours1, first = best_time(ours_round1(name, topics, subs), repeats)
    ours2, second = best_time(ours_round2(name, topics, remaining, first), repeats)
    counts = [len(a.partitions) for a in first.values()]
    report: dict[str, Any] = {
        "case": case.name,
        "assignor": name,
        "partitions": case.partitions,
        "topics": case.topics,
        "consumers": case.consumers,
        "subscriptions": (
            "identical"
            if case.topics_per_consumer is None
            else f"{case.topics_per_consumer} random topics each"
        ),
        "kgroups_s": round(ours1, 4),
        "kgroups_spread": max(counts) - min(counts),
        "round2": {
            "left": leaving,
            "departed_partitions": len(first[leaving].partitions),
            "kgroups_s": round(ours2, 4),
            "kgroups_moved": moved(first, second),
        },
    }

    sticky = name in ("sticky", "cooperative-sticky")
    if sticky and case.partitions > KAFKA_PYTHON_STICKY_LIMIT:
        report["kafka_python"] = (
            f"skipped above {KAFKA_PYTHON_STICKY_LIMIT} partitions: too slow to wait for"
        )
        return report
    try:
        theirs1, their_first = best_time(theirs(name, topics, subs), repeats)
        theirs2, their_second = best_time(theirs(name, topics, remaining, their_first), repeats)
    except Exception as e:  # kafka-python's roundrobin fails on uneven subscriptions
        report["kafka_python"] = f"failed: {type(e).__name__}: {e}"
        return report
    their_counts = [len(a.partitions) for a in their_first.values()]
    report["kafka_python_s"] = round(theirs1, 4)
    report["kafka_python_spread"] = max(their_counts) - min(their_counts)
    report["ratio"] = round(theirs1 / ours1, 1)
    report["round2"] |= {
        "kafka_python_s": round(theirs2, 4),
        "kafka_python_moved": moved(their_first, their_second),
        "ratio": round(theirs2 / ours2, 1),
    }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--assignors", default=",".join(KAFKA_PYTHON))
    args = parser.parse_args()
    for case_name in args.cases.split(","):
        for name in args.assignors.split(","):
            print(json.dumps(measure(CASES[case_name], name)), flush=True)


if __name__ == "__main__":
    main()
