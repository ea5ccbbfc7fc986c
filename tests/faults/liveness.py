"""The checker's progress rule: once the last fault is healed, every workload
works again within a bound, or it is reported stalled.

The heal is the nemesis' last operation ("heal"). Within ``bound`` seconds
of it:

- each producer has a send acknowledged;
- each transformer has a transaction committed;
- each read_committed reader, and each group through any of its members,
  has read everything acknowledged before the heal on the topic it reads:
  up to the highest offset acknowledged in each partition, and every value
  of a transaction committed by then.

Histories without a heal (no fault run) are not judged, nor are clients
that hung (`hung`): a workload seen in one call far past that call's
timeout, or whose thread did not return from its client library when told
to stop; nor is a group with a hung member, whose rebalance waits for it.
That is the client's own deadlock, not the broker's doing: librdkafka 2.16 can
deadlock its main thread when a broker leaves the cluster's metadata while
an OffsetForLeaderEpoch request to it is outstanding (a lock-order inversion
between its handle and partition locks; upstream issue 5476), and then
stops fetching and never closes. The run notes such clients.
"""

from __future__ import annotations

from collections import defaultdict

from faults.anomaly import Anomaly, Finding
from faults.history import OK, Op


def healed_at(ops: list[Op]) -> float | None:
    heals = [op.time for op in ops if op.f == "nemesis" and op.value.get("fault") == "heal"]
    return heals[-1] if heals else None


def hung(ops: list[Op]) -> set[str]:
    """Processes stuck inside their client library at the end of the run."""
    return {op.process for op in ops if op.f == "hung"}


def liveness(ops: list[Op], bound: float) -> Finding:
    heal = healed_at(ops)
    if heal is None:
        return
    until = heal + bound
    stuck = hung(ops)
    yield from _writers(ops, heal, until, stuck)
    yield from _readers(ops, heal, until, stuck)


def _writers(ops: list[Op], heal: float, until: float, stuck: set[str]) -> Finding:
    kinds = {op.process: op.f for op in ops if op.f in ("produce", "txn")}
    done = {
        op.process
        for op in ops
        if op.type == OK
        and heal < op.time <= until
        and (op.f == "produce" or (op.f == "txn" and op.value.get("outcome") == "commit"))
    }
    for process, f in sorted(kinds.items()):
        if process in stuck:
            continue
        yield "progress", 1
        if process not in done:
            what = "no send acknowledged" if f == "produce" else "no transaction committed"
            yield (
                "",
                Anomaly("stalled", f"{process}: {what} within {until - heal:.0f} s of the heal"),
            )


def _readers(ops: list[Op], heal: float, until: float, stuck: set[str]) -> Finding:
    # What each topic's consumers must have read: offsets and values.
    offsets: dict[str | None, dict[int, int]] = defaultdict(dict)
    values: dict[str | None, set[str]] = defaultdict(set)
    for op in ops:
        if op.type != OK or op.time > heal:
            continue
        topic = op.value.get("topic")
        if op.f == "produce":
            p, o = op.value["partition"], op.value["offset"]
            offsets[topic][p] = max(offsets[topic].get(p, -1), o)
        elif op.f == "txn" and op.value["outcome"] == "commit":
            values[topic].update(v for _p, v in op.value["values"])
    # What each reader (by process) and each group (by any member) read by then.
    read: dict[tuple[str, str | None], dict[int, int]] = defaultdict(dict)
    seen: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for op in ops:
        if op.f != "poll" or op.type != OK:
            continue
        if not op.value.get("group") and not op.value.get("read_committed"):
            continue
        who = f"group {op.value['group']}" if op.value.get("group") else op.process
        key = (who, op.value.get("topic"))
        read.setdefault(key, {})  # judged even if it read nothing in time
        if op.time > until:
            continue
        for p, o, v in op.value["records"]:
            read[key][p] = max(read[key].get(p, -1), o)
            seen[key].add(v)
    members: dict[str, set[str]] = defaultdict(set)
    for op in ops:
        if op.f == "assigned":
            members[f"group {op.value['group']}"].add(op.process)
    for (who, topic), got in sorted(read.items(), key=str):
        if who in stuck or members[who] & stuck:  # a hung member blocks its group's rebalance
            continue
        yield "progress", 1
        behind = {
            p: (got.get(p, -1), o) for p, o in sorted(offsets[topic].items()) if got.get(p, -1) < o
        }
        unseen = values[topic] - seen[(who, topic)]
        if behind or unseen:
            detail = ", ".join(f"{p} at {at} of {o}" for p, (at, o) in behind.items())
            if unseen:
                detail += f"{', ' if detail else ''}{len(unseen)} committed values unread"
            yield (
                "",
                Anomaly(
                    "stalled",
                    f"{who} ({topic}) behind what was acknowledged before the heal"
                    f" {until - heal:.0f} s after it: {detail}",
                ),
            )
