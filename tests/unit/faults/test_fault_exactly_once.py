"""The checker's transaction rules: committed outputs read_committed, once
per input; aborted and unfinished ones never."""

from __future__ import annotations

from typing import Any

from faults.checker import check
from faults.history import INFO, OK, Op

BOUND = 5.0
ABOUT = {"topic": "out", "input": "in", "group": "g"}


class H:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t: float, process: str, type_: str, f: str, **value: Any) -> H:
        self.ops.append(Op(len(self.ops), t, process, type_, f, value))
        return self

    def txn(self, t: float, outcome: str | None, *values: str) -> H:
        vals = [[0, v] for v in values]
        if outcome is None:
            return self.add(t, "x", INFO, "txn", values=vals, **ABOUT)
        return self.add(t, "x", OK, "txn", values=vals, outcome=outcome, **ABOUT)

    def final(self, topic: str, *values: str, read_committed: bool = False, at: int = 0) -> H:
        records = [[at + i, v] for i, v in enumerate(values)]
        return self.add(
            100,
            "final",
            OK,
            "final-read",
            topic=topic,
            partition=0,
            read_committed=read_committed,
            records=records,
        )

    def committed(self, offset: int) -> H:
        return self.add(101, "final", OK, "committed", group="g", offsets={"0": offset})


def kinds(h: H) -> list[str]:
    return sorted(a.kind for a in check(h.ops, BOUND).anomalies)


def inputs() -> H:
    return H().final("in", "a", "b")


def test_each_input_once_in_a_committed_output() -> None:
    h = inputs().txn(1, "commit", "a>x.1").txn(2, "abort", "b>x.2").txn(3, "commit", "b>x.3")
    h.final("out", "a>x.1", "b>x.2", "b>x.3").committed(2)
    h.final("out", "a>x.1", "b>x.3", read_committed=True)
    assert kinds(h) == []


def test_an_input_with_two_committed_outputs_is_processed_twice() -> None:
    h = inputs().txn(1, "commit", "a>x.1").txn(2, None, "a>x.2").committed(1)
    h.final("out", "a>x.1", "a>x.2").final("out", "a>x.1", "a>x.2", read_committed=True)
    assert kinds(h) == ["exactly-once"]


def test_a_committed_input_without_output_and_an_output_past_the_commit() -> None:
    h = inputs().txn(1, "commit", "a>x.1").committed(2)
    h.final("out", "a>x.1").final("out", "a>x.1", read_committed=True)
    assert kinds(h) == ["exactly-once"]
    h = inputs().txn(1, "commit", "a>x.1").committed(0)
    h.final("out", "a>x.1").final("out", "a>x.1", read_committed=True)
    assert kinds(h) == ["exactly-once"]


def test_committed_values_missing_and_aborted_values_present() -> None:
    h = inputs().txn(1, "commit", "a>x.1").txn(2, "abort", "b>x.2").committed(2)
    h.final("out", "a>x.1", "b>x.2").final("out", "b>x.2", read_committed=True)
    assert kinds(h) == ["aborted-read", "exactly-once", "lost"]


def test_a_read_committed_consumer_returning_what_did_not_commit() -> None:
    h = inputs().txn(1, None, "a>x.1").txn(2, "commit", "a>x.2").committed(1)
    h.final("out", "a>x.1", "a>x.2").final("out", "a>x.2", read_committed=True, at=1)
    h.add(3, "r", OK, "poll", topic="out", read_committed=True, records=[[0, 0, "a>x.1"]])
    assert kinds(h) == ["uncommitted-read"]


def test_read_committed_may_skip_markers_and_aborted_records_only() -> None:
    h = inputs().txn(1, "abort", "a>x.1").txn(2, "commit", "a>x.2").txn(3, "commit", "b>x.3")
    h.committed(2).final("out", "a>x.1", "a>x.2", "b>x.3")
    # offsets 0 aborted, 1 its marker... as the final read has them: 0, 1, 2
    h.add(
        100,
        "final",
        OK,
        "final-read",
        topic="out",
        partition=0,
        read_committed=True,
        records=[[1, "a>x.2"], [2, "b>x.3"]],
    )
    h.add(4, "r", OK, "poll", topic="out", read_committed=True, records=[[0, 1, "a>x.2"]])
    h.add(5, "r", OK, "poll", topic="out", read_committed=True, records=[[0, 2, "b>x.3"]])
    assert kinds(h) == []
    h.add(6, "r2", OK, "poll", topic="out", read_committed=True, records=[[0, 0, "a>x.2"]])
    assert "skip" not in kinds(h)
    skipping = inputs().txn(1, "commit", "a>x.1").txn(2, "commit", "b>x.2").committed(2)
    skipping.final("out", "a>x.1", "b>x.2").final("out", "a>x.1", "b>x.2", read_committed=True)
    skipping.add(3, "r", OK, "poll", topic="out", read_committed=True, records=[[0, 0, "a>x.1"]])
    skipping.add(4, "r", OK, "poll", topic="in", read_committed=True, records=[])
    skipping.add(5, "r", OK, "rewind", group="g", partitions=[1])
    assert kinds(skipping) == []


def test_a_rewind_starts_the_partition_afresh() -> None:
    h = inputs().committed(0)
    h.add(1, "x", OK, "assigned", group="g", partitions=[0])
    h.add(2, "x", OK, "poll", group="g", topic="in", records=[[0, 0, "a"], [0, 1, "b"]])
    h.add(3, "x", OK, "poll", group="g", topic="in", records=[[0, 0, "a"]])
    assert kinds(h) == ["non-monotonic"]
    h = inputs().committed(0)
    h.add(1, "x", OK, "assigned", group="g", partitions=[0])
    h.add(2, "x", OK, "poll", group="g", topic="in", records=[[0, 0, "a"], [0, 1, "b"]])
    h.add(2.5, "x", OK, "rewind", group="g", partitions=[0])
    h.add(3, "x", OK, "poll", group="g", topic="in", records=[[0, 0, "a"]])
    assert kinds(h) == []
