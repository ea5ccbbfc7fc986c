"""The progress rule: after the heal, every workload works again in time."""

from __future__ import annotations

from typing import Any

from faults.checker import check
from faults.history import INFO, INVOKE, OK, Op

BOUND = 5.0
PROGRESS = 10.0


class H:
    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t: float, process: str, type_: str, f: str, **value: Any) -> H:
        self.ops.append(Op(len(self.ops), t, process, type_, f, value))
        return self

    def produced(self, t: float, value: str, offset: int) -> H:
        self.add(t, "p", INVOKE, "produce", topic="t", value=value)
        return self.add(
            t + 0.01, "p", OK, "produce", topic="t", value=value, partition=0, offset=offset
        )

    def read(self, t: float, process: str, offset: int, value: str, **more: Any) -> H:
        return self.add(
            t,
            process,
            OK,
            "poll",
            topic="t",
            read_committed=True,
            records=[[0, offset, value]],
            **more,
        )

    def heal(self, t: float) -> H:
        return self.add(t, "nemesis", INFO, "nemesis", fault="heal", target=-1, phase="stop")

    def final(self, *values: str) -> H:
        records = [[i, v] for i, v in enumerate(values)]
        return self.add(99, "final", OK, "final-read", topic="t", partition=0, records=records)


def stalls(h: H) -> list[str]:
    return [a.detail for a in check(h.ops, BOUND, PROGRESS).anomalies if a.kind == "stalled"]


def base() -> H:
    h = H().produced(1, "a", 0).produced(2, "b", 1).read(3, "r", 0, "a").heal(4)
    return h.produced(6, "c", 2)


def test_workloads_working_again_after_the_heal_are_live() -> None:
    h = base().read(7, "r", 1, "b").read(8, "r", 2, "c").final("a", "b", "c")
    assert stalls(h) == []


def test_a_reader_that_never_reaches_what_was_acknowledged_before_the_heal() -> None:
    h = base().read(30, "r", 1, "b").read(30, "r", 2, "c").final("a", "b", "c")
    (stall,) = stalls(h)
    assert stall.startswith("r (t) behind") and "0 at 0 of 1" in stall


def test_a_group_is_live_through_any_member() -> None:
    h = base().read(3, "m1", 0, "a", group="g").read(7, "m2", 1, "b", group="g")
    assert stalls(h.read(8, "r", 1, "b").final("a", "b", "c")) == []
    h = base().read(3, "m1", 0, "a", group="g").read(8, "r", 1, "b").final("a", "b", "c")
    assert [s.split(" (")[0] for s in stalls(h)] == ["group g"]


def test_a_producer_without_acknowledgement_after_the_heal() -> None:
    h = H().produced(1, "a", 0).heal(2).add(3, "p", INVOKE, "produce", value="b")
    (stall,) = stalls(h.final("a"))
    assert stall.startswith("p: no send acknowledged")


def test_a_transformer_must_commit_after_the_heal() -> None:
    about = {"topic": "o", "input": "t", "group": "x"}
    h = H().add(1, "x1", OK, "txn", values=[[0, "a>1"]], outcome="commit", **about).heal(2)
    h.add(3, "x1", OK, "txn", values=[[0, "b>2"]], outcome="abort", **about)
    (stall,) = stalls(h)
    assert stall.startswith("x1: no transaction committed")


def test_no_heal_no_judgement() -> None:
    assert stalls(H().produced(1, "a", 0).final("a")) == []


def test_a_client_stuck_in_its_library_is_noted_not_judged() -> None:
    h = base().read(30, "r", 1, "b").final("a", "b", "c")
    assert len(stalls(h)) == 1
    h.add(98, "r", INFO, "hung")
    assert stalls(h) == []


def test_a_group_with_a_hung_member_is_not_judged() -> None:
    h = base().add(2, "m1", OK, "assigned", group="g", partitions=[0])
    h.read(3, "m1", 0, "a", group="g").read(8, "r", 1, "b").final("a", "b", "c")
    assert [s.split(" (")[0] for s in stalls(h)] == ["group g"]
    h.add(50, "m1", INFO, "hung")
    assert stalls(h) == []
