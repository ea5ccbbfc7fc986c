"""The checker's rules for consume-transform-produce transactions.

A transformer's `txn` operations name the topic they write ("topic"), the
topic they read ("input") and the group whose offsets they commit
("group"); each output value is `<input value>><attempt>`. After the run
the output topic is read in full twice: read_uncommitted (the usual final
read) and read_committed. Against the read_committed one:

- lost: a transaction acknowledged as committed whose values are not there.
- aborted-read: a value of a transaction acknowledged as aborted is there.
- uncommitted-read: a read_committed consumer returned a value that is not
  there (a record of a transaction that did not commit).
- exactly-once: an input with two committed outputs; an input below the
  group's final committed offset with none; an output of an input at or
  past that offset (its offsets were not committed with it).
"""

from __future__ import annotations

from collections import defaultdict

from faults.anomaly import Anomaly, Final, Finding
from faults.history import OK, Op


def source(output: str) -> str:
    """The input value an output value was made from."""
    return output.rsplit(">", 1)[0]


def exactly_once(ops: list[Op], final: Final, committed: Final) -> Finding:
    txns = [op for op in ops if op.f == "txn" and op.type == OK]
    sinks = {(op.value.get("topic"), op.value.get("input"), op.value.get("group")) for op in txns}
    for sink, input_topic, group in sorted(sinks, key=str):
        visible = {
            v: (p, o)
            for (t, p), records in committed.items()
            if t == sink
            for o, v in records.items()
        }
        if not any(t == sink for t, _p in committed):
            continue  # no read_committed final read of this topic
        yield from _outcomes([op for op in txns if op.value.get("topic") == sink], visible)
        yield from _read_committed_reads(ops, sink, visible)
        if input_topic is not None and group is not None:
            yield from _one_output_per_input(ops, final, input_topic, group, visible)


def _outcomes(txns: list[Op], visible: dict[str, tuple[int, int]]) -> Finding:
    for op in txns:
        outcome = op.value["outcome"]
        for _p, value in op.value["values"]:
            yield f"txn-{outcome}", 1
            if outcome == "commit" and value not in visible:
                yield "", Anomaly("lost", f"{value!r} committed, not read read_committed")
            elif outcome == "abort" and value in visible:
                yield "", Anomaly("aborted-read", f"{value!r} aborted, read read_committed")


def _read_committed_reads(ops: list[Op], sink: str, visible: dict[str, tuple[int, int]]) -> Finding:
    aborted = {
        v
        for op in ops
        if op.f == "txn" and op.type == OK and op.value["outcome"] == "abort"
        for _p, v in op.value["values"]
    }
    for op in ops:
        if op.f != "poll" or op.type != OK or op.value.get("topic") != sink:
            continue
        if not op.value.get("read_committed"):
            continue
        for partition, offset, value in op.value["records"]:
            if value not in visible and value not in aborted:  # aborted-read tells those
                yield (
                    "",
                    Anomaly(
                        "uncommitted-read",
                        f"{op.process} read {value!r} at {partition}/{offset} (t={op.time:.3f}),"
                        " not committed",
                    ),
                )


def _one_output_per_input(
    ops: list[Op],
    final: Final,
    input_topic: str,
    group: str,
    visible: dict[str, tuple[int, int]],
) -> Finding:
    outputs: dict[str, list[str]] = defaultdict(list)
    for value in visible:
        outputs[source(value)].append(value)
    ends: dict[int, int] = {}  # the group's committed offsets, as last read
    for op in ops:
        if op.f == "committed" and op.type == OK and op.value["group"] == group:
            ends = {int(p): int(o) for p, o in op.value["offsets"].items()}
    inputs = {
        v: (p, o)
        for (t, p), records in final.items()
        if t == input_topic
        for o, v in records.items()
    }
    for value, made in outputs.items():
        yield "outputs", 1
        if len(made) > 1:
            yield "", Anomaly("exactly-once", f"input {value!r} has outputs {sorted(made)}")
        at = inputs.get(value)
        if at is not None and at[1] >= ends.get(at[0], 0):
            yield (
                "",
                Anomaly(
                    "exactly-once",
                    f"input {value!r} at {at[0]}/{at[1]} has an output, but group {group}"
                    f" committed only up to {ends.get(at[0], 0)}",
                ),
            )
    for value, (p, o) in inputs.items():
        if o < ends.get(p, 0) and value not in outputs:
            yield (
                "",
                Anomaly(
                    "exactly-once",
                    f"input {value!r} at {p}/{o} below group {group}'s committed"
                    f" {ends[p]} has no output",
                ),
            )
