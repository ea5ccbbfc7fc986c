"""Server-side assignors (KIP-848 consumer groups): time to compute a target
assignment.

Shaped like Kafka's ServerSideAssignorBenchmark: T topics share
members x 10 partitions; with homogeneous subscriptions every member reads
every topic, with heterogeneous ones the members are split in 5 buckets,
each reading its fifth of the topics; with overlapping ones (not in Kafka's
benchmark) each member reads its own random tenth of the topics, so every
member has a subscription of its own. Cases:

- ``fresh``: nobody holds anything yet;
- ``join``: the group is assigned, then one more member joins (Kafka's
  INCREMENTAL case);
- ``leave``: the group is assigned, then one member leaves.

Prints one JSON object per (assignor, subscriptions, size, case): the best
and the median of ``--runs`` timings in milliseconds (garbage collection
enabled), and ``moved``, the partitions taken from members that stayed
(join/leave). Usage:

    .venv/bin/python bench/consumer_assignors.py [--sizes 10000x100000x100,...]
        [--assignors uniform,range] [--runs 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
import uuid

from kgroups.coordinator.consumer_assignors import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    TopicMetadata,
    assignor,
)

BUCKETS = 5
DEFAULT_SIZES = "100x1000x10,1000x10000x100,10000x100000x100"


def build_group(
    members: int, partitions: int, topic_count: int, kind: str
) -> tuple[list[MemberSpec], dict[uuid.UUID, TopicMetadata]]:
    topic_ids = [
        uuid.UUID(int=(i + 1) * 0x9E3779B97F4A7C15_F39CC0605CEDC835 % (1 << 128))
        for i in range(topic_count)
    ]
    per_topic = partitions // topic_count
    metadata = {t: TopicMetadata(per_topic) for t in topic_ids}
    if kind == "homogeneous":
        everything = frozenset(topic_ids)
        subscriptions = [everything] * members
    elif kind == "overlapping":
        rng = random.Random(members)
        reads = max(1, topic_count // 10)
        subscriptions = [frozenset(rng.sample(topic_ids, reads)) for _ in range(members)]
    else:
        # Members share their bucket's subscription object, as a coordinator
        # that resolves the same topic names once would hand them out.
        topics_per_bucket = -(-topic_count // BUCKETS)
        members_per_bucket = -(-members // BUCKETS)
        buckets = [
            frozenset(topic_ids[b * topics_per_bucket : (b + 1) * topics_per_bucket])
            for b in range(BUCKETS)
        ]
        subscriptions = [buckets[i // members_per_bucket] for i in range(members)]
    specs = [MemberSpec(f"member{i}", subscriptions[i]) for i in range(members)]
    return specs, metadata


def with_assignment(members: list[MemberSpec], result: GroupAssignment) -> list[MemberSpec]:
    return [MemberSpec(m.member_id, m.subscribed_topic_ids, result[m.member_id]) for m in members]


def moved(before: list[MemberSpec], after: GroupAssignment) -> int:
    count = 0
    for member in before:
        target = after.get(member.member_id)
        if target is None:
            continue
        for topic_id, partitions in member.assignment.items():
            count += len(partitions - target.get(topic_id, frozenset()))
    return count


def timed(
    name: str, group: GroupSpec, metadata: dict[uuid.UUID, TopicMetadata], runs: int
) -> tuple[list[float], GroupAssignment]:
    chosen = assignor(name)
    timings = []
    for _ in range(runs):
        gc.collect()  # each run starts without earlier garbage; collections during it count
        start = time.perf_counter()
        result = chosen.assign(group, metadata)
        timings.append((time.perf_counter() - start) * 1000)
    return timings, result


def run(name: str, members: int, partitions: int, topic_count: int, kind: str, runs: int) -> None:
    specs, metadata = build_group(members, partitions, topic_count, kind)
    base = {
        "assignor": name,
        "subscriptions": kind,
        "members": members,
        "partitions": partitions,
        "topics": topic_count,
    }
    timings, first = timed(name, GroupSpec(specs), metadata, runs)
    report({**base, "case": "fresh"}, timings, None)

    assigned = with_assignment(specs, first)
    newcomer = MemberSpec("member-new", specs[-1].subscribed_topic_ids)
    for case, group in (("join", [*assigned, newcomer]), ("leave", assigned[1:])):
        timings, result = timed(name, GroupSpec(group), metadata, runs)
        report({**base, "case": case}, timings, moved(group, result))


def report(fields: dict[str, object], timings: list[float], moves: int | None) -> None:
    fields["ms_best"] = round(min(timings), 2)
    fields["ms_median"] = round(statistics.median(timings), 2)
    if moves is not None:
        fields["moved"] = moves
    print(json.dumps(fields), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="members x partitions x topics, ...")
    parser.add_argument("--assignors", default="uniform,range")
    parser.add_argument("--subscriptions", default="homogeneous,heterogeneous,overlapping")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for size in args.sizes.split(","):
        members, partitions, topic_count = (int(x) for x in size.split("x"))
        for name in args.assignors.split(","):
            for kind in args.subscriptions.split(","):
                run(name, members, partitions, topic_count, kind, args.runs)


if __name__ == "__main__":
    main()
