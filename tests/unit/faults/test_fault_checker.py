"""The fault checker finds each anomaly it names in a history that has it,
and nothing in one that does not."""

from __future__ import annotations

from typing import Any

from faults.checker import check
from faults.history import INFO, INVOKE, OK, Op

BOUND = 5.0


class H:
    """A history written by hand: times are given, indexes follow."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(self, t: float, process: str, type_: str, f: str, **value: Any) -> H:
        self.ops.append(Op(len(self.ops), t, process, type_, f, value))
        return self

    def produced(self, t: float, value: str, partition: int, offset: int) -> H:
        self.add(t, "p", INVOKE, "produce", value=value)
        return self.add(
            t + 0.01, "p", OK, "produce", value=value, partition=partition, offset=offset
        )

    def final(self, partition: int, *values: str, first: int = 0) -> H:
        records = [[first + i, v] for i, v in enumerate(values)]
        return self.add(100, "final", OK, "final-read", partition=partition, records=records)


def kinds(h: H) -> list[str]:
    return sorted(a.kind for a in check(h.ops, BOUND).anomalies)


def healthy() -> H:
    h = H().produced(1, "a", 0, 0).produced(2, "b", 0, 1).produced(3, "c", 1, 0)
    h.add(3, "c1", OK, "assigned", group="g", partitions=[0, 1])
    h.add(4, "c1", OK, "poll", group="g", records=[[0, 0, "a"], [0, 1, "b"], [1, 0, "c"]])
    h.add(5, "c1", INVOKE, "commit", group="g", offsets={0: 2, 1: 1})
    h.add(5.1, "c1", OK, "commit", group="g", offsets={0: 2, 1: 1})
    h.add(6, "c1", OK, "revoked", group="g", partitions=[1])
    h.add(7, "c2", OK, "assigned", group="g", partitions=[1])
    h.add(8, "obs", INVOKE, "committed", group="g")
    h.add(8.1, "obs", OK, "committed", group="g", offsets={0: 2, 1: 1})
    return h.final(0, "a", "b").final(1, "c")


def test_a_healthy_history_has_no_anomaly() -> None:
    result = check(healthy().ops, BOUND)
    assert result.valid, result.anomalies
    assert result.checked["acknowledged"] == 3 and result.checked["consumed"] == 3
    assert result.checked["commit-reads"] == 2


def test_an_acknowledged_record_missing_from_the_final_read_is_lost() -> None:
    h = H().produced(1, "a", 0, 0).produced(2, "b", 0, 1).final(0, "a")
    assert kinds(h) == ["lost"]


def test_an_unacknowledged_record_may_be_there_or_not() -> None:
    h = H().produced(1, "a", 0, 0).add(2, "p", INVOKE, "produce", value="b")
    assert (
        kinds(h.final(0, "a")) == [] and kinds(H().produced(1, "a", 0, 0).final(0, "a", "b")) == []
    )


def test_a_value_at_two_offsets_is_a_duplicate() -> None:
    assert kinds(H().produced(1, "a", 0, 0).final(0, "a", "a")) == ["duplicate"]


def test_a_record_found_elsewhere_than_acknowledged_has_a_wrong_offset() -> None:
    h = H().produced(1, "a", 0, 0).produced(2, "b", 0, 0).final(0, "a", "b")
    assert kinds(h) == ["wrong-offset"]


def test_offsets_missing_in_the_final_read_are_a_gap_unless_transactional() -> None:
    h = H().produced(1, "a", 0, 0).produced(2, "b", 0, 2)
    h.add(99, "final", OK, "final-read", partition=0, records=[[0, "a"], [2, "b"]])
    assert kinds(h) == ["gap"]
    h.add(3, "t", OK, "txn", values=[], outcome="commit")
    assert kinds(h) == []


def test_a_consumer_reading_what_the_final_read_lacks_is_inconsistent() -> None:
    h = H().produced(1, "a", 0, 0).add(2, "r", OK, "poll", records=[[0, 0, "x"]])
    assert kinds(h.final(0, "a")) == ["inconsistent-read"]


def test_skipped_and_repeated_offsets_within_one_ownership() -> None:
    h = (
        H()
        .produced(1, "a", 0, 0)
        .produced(1, "b", 0, 1)
        .produced(1, "c", 0, 2)
        .final(0, "a", "b", "c")
    )
    h.add(2, "r", OK, "poll", records=[[0, 0, "a"], [0, 2, "c"]])
    assert kinds(h) == ["skip"]
    h.add(3, "r", OK, "poll", records=[[0, 1, "b"]])
    assert kinds(h) == ["non-monotonic", "skip"]


def test_a_new_ownership_may_start_anywhere() -> None:
    h = H().produced(1, "a", 0, 0).produced(1, "b", 0, 1).final(0, "a", "b")
    h.add(2, "c", OK, "assigned", group="g", partitions=[0])
    h.add(3, "c", OK, "poll", group="g", records=[[0, 0, "a"], [0, 1, "b"]])
    h.add(4, "c", OK, "revoked", group="g", partitions=[0])
    h.add(5, "c", OK, "assigned", group="g", partitions=[0])
    h.add(6, "c", OK, "poll", group="g", records=[[0, 0, "a"]])
    assert kinds(h) == []


def test_two_owners_at_once_beyond_the_session_bound() -> None:
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(1 + BOUND - 1, "c1", OK, "revoked", group="g", partitions=[0])
    assert kinds(h.add(30, "c2", OK, "poll", group="g", records=[])) == []
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(1 + BOUND + 1, "c1", OK, "revoked", group="g", partitions=[0])
    assert kinds(h.add(30, "c2", OK, "poll", group="g", records=[])) == ["double-owner"]


def test_an_owner_that_never_gave_a_partition_up_owns_it_to_its_last_operation() -> None:
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(20, "c1", OK, "poll", group="g", records=[])
    assert kinds(h.add(30, "c2", OK, "poll", group="g", records=[])) == ["double-owner"]
    other_group = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    other_group.add(1, "c2", OK, "assigned", group="h", partitions=[0])
    other_group.add(20, "c1", OK, "poll", records=[])
    assert kinds(other_group.add(30, "c2", OK, "poll", records=[])) == []


def test_a_committed_offset_read_behind_an_acknowledged_commit() -> None:
    h = H().add(1, "c", INVOKE, "commit", group="g", offsets={0: 5})
    h.add(2, "c", OK, "commit", group="g", offsets={0: 5})
    h.add(3, "o", INVOKE, "committed", group="g")
    h.add(4, "o", OK, "committed", group="g", offsets={0: 4})
    assert kinds(h) == ["commit-regressed"]


def test_a_read_begun_before_the_acknowledgement_may_see_the_older_offset() -> None:
    h = H().add(1, "c", INVOKE, "commit", group="g", offsets={0: 5})
    h.add(1.5, "o", INVOKE, "committed", group="g")
    h.add(2, "c", OK, "commit", group="g", offsets={0: 5})
    h.add(4, "o", OK, "committed", group="g", offsets={0: 4})
    assert kinds(h) == []


def test_a_reset_group_may_start_over() -> None:
    h = H().add(2, "c", OK, "commit", group="g", offsets={0: 5})
    h.add(3, "admin", OK, "reset", group="g")
    h.add(4, "o", INVOKE, "committed", group="g")
    h.add(5, "o", OK, "committed", group="g", offsets={})
    assert kinds(h) == []


def test_a_new_owner_starting_behind_an_acknowledged_commit() -> None:
    h = H().produced(0, "a", 0, 0).produced(0, "b", 0, 1).final(0, "a", "b")
    h.add(2, "c1", OK, "commit", group="g", offsets={0: 1})
    h.add(3, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(4, "c2", OK, "poll", group="g", records=[[0, 0, "a"]])
    assert kinds(h) == ["commit-regressed"]


def test_a_read_committed_consumer_returning_an_aborted_record() -> None:
    h = H().add(1, "t", OK, "txn", values=[[0, "x"]], outcome="abort").final(0, "x")
    assert kinds(h.add(2, "r", OK, "poll", read_committed=False, records=[[0, 0, "x"]])) == []
    assert kinds(h.add(3, "r2", OK, "poll", read_committed=True, records=[[0, 0, "x"]])) == [
        "aborted-read"
    ]


def test_a_fatal_client_error_is_an_anomaly() -> None:
    h = H().add(1, "p", INFO, "fatal", error="OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert kinds(h) == ["fatal"]


def test_a_group_whose_members_go_long_without_polling_has_a_longer_bound() -> None:
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(1 + BOUND + 5, "c1", OK, "revoked", group="g", partitions=[0])
    h.add(30, "c2", OK, "poll", group="g", records=[])
    assert [a.kind for a in check(h.ops, BOUND).anomalies] == ["double-owner"]
    assert check(h.ops, BOUND, None, {"g": 6.0}).valid


def test_a_member_stuck_in_its_client_library_owns_nothing_worth_judging() -> None:
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(30, "c2", OK, "poll", group="g", records=[])
    h.add(40, "c1", OK, "revoked", group="g", partitions=[0])
    assert kinds(h) == ["double-owner"]
    assert kinds(h.add(41, "c1", INFO, "hung")) == []


def test_a_member_cut_from_its_coordinator_is_judged_by_its_last_acknowledged_commit() -> None:
    # c1's client keeps its partitions while it cannot reach the coordinator
    # (librdkafka's consumer protocol has no session timeout of its own); the
    # coordinator's part is to hand them on only once it stopped acknowledging c1.
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(1, "c1", OK, "commit", group="g", offsets={"0": 5})
    h.add(1 + BOUND, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(1 + 3 * BOUND, "c1", OK, "revoked", group="g", partitions=[0])
    h.add(1 + 4 * BOUND, "c2", OK, "poll", group="g", records=[])
    assert [a.kind for a in check(h.ops, BOUND).anomalies] == ["double-owner"]
    assert check(h.ops, BOUND, unfenced=frozenset({"c1"})).valid
    # A commit acknowledged to c1 after c2 had the partition: both owned it.
    h.add(1 + 3 * BOUND - 0.5, "c1", OK, "commit", group="g", offsets={"0": 6})
    h.ops.sort(key=lambda op: op.time)
    assert [a.kind for a in check(h.ops, BOUND, unfenced=frozenset({"c1"})).anomalies] == [
        "double-owner"
    ]


def test_time_a_member_spent_stalled_in_one_client_call_is_not_judged() -> None:
    # c1 was stuck in a call from t=2 to t=40, far past its timeout: it could
    # not hear that c2 had its partition since t=3.
    h = H().add(0, "c1", OK, "assigned", group="g", partitions=[0])
    h.add(3, "c2", OK, "assigned", group="g", partitions=[0])
    h.add(40, "c1", INFO, "stalled", since=2.0)
    h.add(40.5, "c1", OK, "revoked", group="g", partitions=[0])
    h.add(50, "c2", OK, "poll", group="g", records=[])
    assert kinds(h) == []
    # Owning it at once outside the stall is still a double owner.
    h.ops[-3] = Op(2, 40, "c1", INFO, "stalled", {"since": 30.0})
    assert kinds(h) == ["double-owner"]
