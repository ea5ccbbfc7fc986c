"""The checker: what a history must satisfy, whatever faults happened.

Pure functions of the recorded operations (see history.py), so each rule is
unit-tested by feeding it histories with known anomalies. Every rule names
the anomaly it finds; a correct broker gives none.

- lost: an acknowledged record missing from the final full read.
- duplicate: a value at two offsets of the final read (every value is unique).
- wrong-offset: a record acknowledged at one offset and found at another.
- gap: offsets of a partition's final read not dense from 0 (topics written
  in transactions excepted: their markers take offsets no consumer sees).
- inconsistent-read: a consumer saw at (partition, offset) what the final
  read does not have there.
- skip / non-monotonic: within one consumer's continuous ownership of a
  partition (a rewind to the committed offsets starts a new one), an offset
  that is not the one after the last it saw; in a topic written in
  transactions a read_committed consumer may skip only offsets the
  read_committed final read does not have either (markers, aborted records).
- double-owner: two members of a group owned a partition at once for longer
  than the session bound (the time it takes the group to notice a member gone),
  plus, for a group whose members may go that long without polling (and so
  without hearing of a revocation), that time. A member whose client keeps
  its partitions while it cannot reach the coordinator (``unfenced``:
  librdkafka under the consumer protocol has no session timeout of its own,
  against Kafka too) owns them, as far as the group is concerned, until its
  last acknowledged commit: the coordinator's part is to hand them on only
  once it stopped acknowledging that member. Time a member spent in one
  client call far past that call's timeout (``stalled``: librdkafka stuck,
  see wedged.py) is not counted: no broker can make a stuck client hear of a
  revocation, and its next call to the group is fenced.
- commit-regressed: a read of the committed offsets (or a new owner's first
  offset) behind a commit acknowledged before that read began.
- aborted-read: a read_committed consumer returned a record of an aborted
  transaction.
- fatal: a client's fatal error (an idempotent producer's sequence lost, say):
  no fault the nemesis injects excuses one.

Transactions (exactly_once.py) and progress after the faults (liveness.py)
have rules of their own.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from faults.anomaly import Anomaly, Final, Finding
from faults.exactly_once import exactly_once
from faults.history import INVOKE, OK, Op
from faults.liveness import hung, liveness


@dataclass
class Result:
    anomalies: list[Anomaly] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)

    @property
    def valid(self) -> bool:
        return not self.anomalies


def check(
    ops: list[Op],
    session_bound_s: float,
    progress_bound_s: float | None = None,
    deaf_s: dict[str, float] | None = None,
    unfenced: frozenset[str] = frozenset(),
) -> Result:
    """``progress_bound_s``: how soon after the last fault heals every
    workload must make progress again (None: not checked); ``deaf_s``: per
    group, how long its members may go without polling; ``unfenced``: the
    members whose client keeps its partitions while cut from the coordinator."""
    result = Result()
    final = _final_read(ops)
    transactional = {op.value.get("topic") for op in ops if op.f == "txn"}
    committed = _final_read(ops, read_committed=True)
    rules = [
        _final_read_shape(final, transactional),
        _acknowledged_writes(ops, final),
        _consumed_records(ops, final, committed),
        _ownership(ops, session_bound_s, deaf_s or {}, unfenced),
        _commits(ops),
        _aborted_reads(ops),
        _fatal_errors(ops),
        exactly_once(ops, final, committed),
    ]
    if progress_bound_s is not None:
        rules.append(liveness(ops, progress_bound_s))
    for rule in rules:
        for kind, item in rule:
            if isinstance(item, Anomaly):
                result.anomalies.append(item)
            else:
                result.checked[kind] += item
    return result


def _final_read(ops: list[Op], read_committed: bool = False) -> Final:
    """(topic, partition) -> offset -> value, from the final-read operations
    (the full read, or the read_committed one of transactional topics)."""
    final: Final = defaultdict(dict)
    for op in ops:
        if (
            op.f == "final-read"
            and op.type == OK
            and bool(op.value.get("read_committed")) == read_committed
        ):
            for offset, value in op.value["records"]:
                final[(op.value.get("topic"), int(op.value["partition"]))][int(offset)] = value
    return final


def _final_read_shape(final: Final, transactional: set[str | None]) -> Finding:
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (topic, partition), records in sorted(final.items(), key=lambda i: (str(i[0][0]), i[0][1])):
        offsets = sorted(records)
        yield "final-records", len(offsets)
        if topic not in transactional and offsets != list(range(len(offsets))):
            missing = sorted(set(range(offsets[-1] + 1)) - set(offsets))
            yield "", Anomaly("gap", f"{topic} partition {partition} lacks offsets {_few(missing)}")
        for offset, value in records.items():
            where[value].append((partition, offset))
    for value, places in where.items():
        if len(places) > 1:
            yield "", Anomaly("duplicate", f"{value!r} at {sorted(places)}")


def _acknowledged_writes(ops: list[Op], final: Final) -> Finding:
    found: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (_t, p), records in final.items():
        for o, v in records.items():
            found[v].append((p, o))
    for op in ops:
        if op.type != OK or op.f not in ("produce", "txn"):
            continue
        if op.f == "txn" and op.value["outcome"] != "commit":
            continue
        writes = (
            [(op.value["value"], op.value["partition"], op.value["offset"])]
            if op.f == "produce"
            else [(v, p, -1) for p, v in op.value["values"]]
        )
        for value, partition, offset in writes:
            yield "acknowledged", 1
            at = found.get(value)
            if not at:
                yield "", Anomaly("lost", f"{value!r} acknowledged at {partition}/{offset}")
            elif not any(p == partition and offset in (o, -1) for p, o in at):
                yield (
                    "",
                    Anomaly(
                        "wrong-offset",
                        f"{value!r} acknowledged at {partition}/{offset}, read at {at}",
                    ),
                )


def _consumed_records(ops: list[Op], final: Final, committed: Final) -> Finding:
    last: dict[tuple[str, int], int] = {}  # (process, partition) -> offset seen last
    for op in ops:
        if op.f in ("assigned", "revoked", "rewind") and op.type == OK:
            for partition in op.value["partitions"]:
                last.pop((op.process, partition), None)  # a new ownership starts afresh
        if op.f != "poll" or op.type != OK:
            continue
        topic = op.value.get("topic")
        for partition, offset, value in op.value["records"]:
            yield "consumed", 1
            there = final.get((topic, partition), {}).get(offset)
            if there != value:
                yield (
                    "",
                    Anomaly(
                        "inconsistent-read",
                        f"{op.process} read {value!r} at {partition}/{offset};"
                        f" the final read has {there!r}",
                    ),
                )
            before = last.get((op.process, partition))
            visible = committed.get((topic, partition))
            if (
                visible is not None
                and op.value.get("read_committed")
                and before is not None
                and offset > before + 1
                and not any(o in visible for o in range(before + 1, offset))
            ):
                before = offset - 1  # only markers and aborted records between
            if before is not None and offset != before + 1:
                kind = "skip" if offset > before + 1 else "non-monotonic"
                yield (
                    "",
                    Anomaly(
                        kind,
                        f"{op.process} read {partition}/{offset} after {before} (t={op.time:.3f})",
                    ),
                )
            last[(op.process, partition)] = offset


def _ownership(
    ops: list[Op], session_bound: float, deaf_s: dict[str, float], unfenced: frozenset[str]
) -> Finding:
    """Intervals of (group, partition) owned by each process; an owner still
    holding a partition at its last operation owns it until then."""
    # A member stuck in its client library never hears of a revocation.
    stuck = hung(ops)
    open_: dict[tuple[str, int, str], float] = {}
    intervals: dict[tuple[str, int], list[tuple[float, float, str]]] = defaultdict(list)
    last_seen: dict[str, float] = {}
    acknowledged: dict[str, list[float]] = defaultdict(list)  # commits, of unfenced members
    stalls: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for op in ops:
        last_seen[op.process] = op.time
        if op.f == "stalled":
            stalls[op.process].append((op.value["since"], op.time))
        if op.process in unfenced and op.f == "commit" and op.type == OK:
            acknowledged[op.process].append(op.time)
        if op.type != OK or op.f not in ("assigned", "revoked"):
            continue
        for partition in op.value["partitions"]:
            key = (op.value["group"], partition, op.process)
            if op.f == "assigned":
                open_.setdefault(key, op.time)
            elif key in open_:
                intervals[key[:2]].append((open_.pop(key), op.time, op.process))
    for (group, partition, process), start in open_.items():
        intervals[(group, partition)].append((start, last_seen[process], process))
    for (group, partition), spans in sorted(intervals.items()):
        spans.sort()
        yield "ownerships", len(spans)
        for i, (start, end, owner) in enumerate(spans):
            held = end  # as far as the group is concerned
            if owner in unfenced:
                held = max((t for t in acknowledged[owner] if start <= t <= end), default=start)
            for other_start, other_end, other in spans[i + 1 :]:
                if other_start >= end:
                    break
                overlap = _uncovered(
                    other_start, min(held, other_end), stalls[owner] + stalls[other]
                )
                if stuck & {owner, other}:
                    continue
                if other != owner and overlap > session_bound + deaf_s.get(group, 0.0):
                    yield (
                        "",
                        Anomaly(
                            "double-owner",
                            f"group {group} partition {partition}: {owner} [{start:.3f}, {end:.3f}]"
                            f" and {other} [{other_start:.3f}, {other_end:.3f}]"
                            f" overlap {overlap:.1f} s",
                        ),
                    )


def _uncovered(lo: float, hi: float, windows: list[tuple[float, float]]) -> float:
    """How much of [lo, hi] no window covers."""
    length = max(0.0, hi - lo)
    at = lo
    for start, end in sorted(windows):
        start, end = max(start, at), min(end, hi)
        if end > start:
            length -= end - start
            at = end
    return length


def _commits(ops: list[Op]) -> Finding:
    # (group, partition) -> [(ack time, offset)] of acknowledged commits
    acked: dict[tuple[str, int], list[tuple[float, int]]] = defaultdict(list)
    reset_at: dict[str, float] = {}
    invoked: dict[tuple[str, str], float] = {}
    for op in ops:
        if op.f == "reset" and op.type == OK:
            reset_at[op.value["group"]] = op.time
        if op.f == "commit" and op.type == OK:
            for partition, offset in op.value["offsets"].items():
                acked[(op.value["group"], int(partition))].append((op.time, int(offset)))
    since: dict[tuple[str, int, str], float] = {}  # when a member gained a partition
    for op in ops:
        if op.type == INVOKE:
            invoked[(op.process, op.f)] = op.time
            continue
        if op.type != OK:
            continue
        if op.f == "committed":
            began = invoked.get((op.process, op.f), op.time)
            group = op.value["group"]
            for key in {k for k in acked if k[0] == group}:
                yield "commit-reads", 1
                seen = op.value["offsets"].get(str(key[1]), op.value["offsets"].get(key[1], -1))
                yield from _behind(acked[key], reset_at.get(group, -1.0), began, key, seen, op)
        elif op.f in ("assigned", "rewind"):
            for partition in op.value["partitions"]:
                since[(op.value["group"], partition, op.process)] = op.time
        elif op.f == "revoked":
            for partition in op.value["partitions"]:
                since.pop((op.value["group"], partition, op.process), None)
        elif op.f == "poll" and op.value.get("group"):
            group = op.value["group"]
            for partition, offset, _value in op.value["records"]:
                gained = since.pop((group, partition, op.process), None)
                if gained is not None:
                    yield "first-offsets", 1
                    key = (group, partition)
                    yield from _behind(
                        acked.get(key, []), reset_at.get(group, -1.0), gained, key, offset, op
                    )


def _behind(
    commits: list[tuple[float, int]],
    reset: float,
    began: float,
    key: tuple[str, int],
    seen: int,
    op: Op,
) -> Finding:
    before = [(t, o) for t, o in commits if reset < t < began]
    if before:
        t, required = max(before, key=lambda c: c[1])
        if seen < required:
            yield (
                "",
                Anomaly(
                    "commit-regressed",
                    f"group {key[0]} partition {key[1]}: {op.process} {op.f} at t={op.time:.3f}"
                    f" saw {seen}, behind {required} acknowledged at t={t:.3f}",
                ),
            )


def _aborted_reads(ops: list[Op]) -> Finding:
    aborted = {
        v
        for op in ops
        if op.f == "txn" and op.type == OK and op.value["outcome"] == "abort"
        for _p, v in op.value["values"]
    }
    for op in ops:
        if op.f == "poll" and op.type == OK and op.value.get("read_committed"):
            yield "read-committed", len(op.value["records"])
            for partition, offset, value in op.value["records"]:
                if value in aborted:
                    yield (
                        "",
                        Anomaly(
                            "aborted-read",
                            f"{op.process} read aborted {value!r} at {partition}/{offset}",
                        ),
                    )


def _fatal_errors(ops: list[Op]) -> Finding:
    for op in ops:
        if op.f == "fatal":
            yield "", Anomaly("fatal", f"{op.process} at t={op.time:.3f}: {op.value.get('error')}")


def _few(items: list[Any], n: int = 10) -> str:
    return ", ".join(map(str, items[:n])) + (f" (+{len(items) - n})" if len(items) > n else "")
