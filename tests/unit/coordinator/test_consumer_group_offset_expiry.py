"""Offset retention for consumer groups (KIP-848), as Kafka 4.x does it: a
group with members keeps the offsets of the topics it subscribes to (by name
or by regex); any other offset expires a retention after its commit, members
or not."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import CoordinatorConfig

from .harness import Harness

RETENTION = 60_000
CHECK = 10_000


def harness() -> Harness:
    return Harness(
        CoordinatorConfig(offsets_retention_ms=RETENTION, offsets_retention_check_interval_ms=CHECK)
    )


def stay(h: Harness, member_id: str, epoch: int, ms: int) -> None:
    """The member heartbeats (well within its session) for ``ms``."""
    for _ in range(ms // 5_000):
        h.advance(5_000)
        assert h.consumer_heartbeat("g", member_id, epoch).error_code is ErrorCode.none


def committed(h: Harness) -> dict[tuple[str, int], int]:
    return {tp: offset for tp, (offset, _, _) in h.fetch("g", {"t": [0], "u": [0]}).items()}


def test_offsets_of_topics_the_group_does_not_subscribe_to_expire_while_it_has_members() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, topics=("t",))
    epoch = a.member_epoch
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, member_id="a", generation=epoch)
    stay(h, "a", epoch, RETENTION - CHECK)
    assert committed(h) == {("t", 0): 1, ("u", 0): 2}  # not a retention old yet
    stay(h, "a", epoch, 2 * CHECK)
    assert committed(h) == {("t", 0): 1, ("u", 0): -1}
    stay(h, "a", epoch, 3 * RETENTION)
    assert committed(h) == {("t", 0): 1, ("u", 0): -1}
    assert h.consumer_describe("g").group_state == "Stable"


def test_retention_counts_from_each_commit() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, topics=("t",))
    epoch = a.member_epoch
    h.commit("g", {("u", 0): 2}, member_id="a", generation=epoch)
    stay(h, "a", epoch, RETENTION - 2 * CHECK)
    h.commit("g", {("u", 0): 3}, member_id="a", generation=epoch)
    stay(h, "a", epoch, RETENTION - CHECK)
    assert committed(h)[("u", 0)] == 3
    stay(h, "a", epoch, 2 * CHECK)
    assert committed(h)[("u", 0)] == -1


def test_topics_a_regex_resolves_to_count_as_subscribed() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, regex="u.*")
    assert a.error_code is ErrorCode.none and h.owned(a) == {"u": [0, 1]}
    epoch = a.member_epoch
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, member_id="a", generation=epoch)
    stay(h, "a", epoch, 2 * RETENTION)
    assert committed(h) == {("t", 0): -1, ("u", 0): 2}


def test_a_topic_dropped_from_the_subscription_has_its_offsets_expire() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, topics=("t", "u"))
    epoch, owned = a.member_epoch, h.owned(a)
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, member_id="a", generation=epoch)
    stay(h, "a", epoch, 2 * RETENTION)
    assert committed(h) == {("t", 0): 1, ("u", 0): 2}
    answer = h.consumer_heartbeat("g", "a", epoch, topics=("t",), owned=owned)
    assert answer.error_code is ErrorCode.none
    h.advance(CHECK)
    assert committed(h) == {("t", 0): 1, ("u", 0): -1}


def test_an_empty_groups_offsets_expire_a_retention_after_their_commit() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, topics=("t",))
    epoch = a.member_epoch
    h.commit("g", {("t", 0): 1}, member_id="a", generation=epoch)
    stay(h, "a", epoch, RETENTION - 2 * CHECK)
    h.consumer_heartbeat("g", "a", -1)
    assert h.consumer_describe("g").group_state == "Empty"
    h.advance(CHECK)
    assert committed(h)[("t", 0)] == 1
    h.advance(2 * CHECK)  # a retention after the commit, not after the group emptied
    assert committed(h)[("t", 0)] == -1


def test_a_group_with_members_stays_when_all_its_offsets_expire() -> None:
    h = harness()
    a = h.consumer_heartbeat("g", "a", 0, topics=("t",))
    epoch = a.member_epoch
    h.commit("g", {("u", 0): 2}, member_id="a", generation=epoch)
    stay(h, "a", epoch, 2 * RETENTION)
    assert committed(h)[("u", 0)] == -1
    assert h.consumer_describe("g").group_state == "Stable"
    assert h.commit("g", {("t", 0): 5}, member_id="a", generation=epoch) == {
        ("t", 0): ErrorCode.none
    }
    h.restart()
    assert h.consumer_describe("g").group_state == "Stable"
    assert committed(h) == {("t", 0): 5, ("u", 0): -1}
