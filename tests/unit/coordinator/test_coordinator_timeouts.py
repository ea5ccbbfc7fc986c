"""Every delayed operation: sessions, join phases, the initial delay, syncs,
pending and new members."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator import CoordinatorConfig, GroupState
from kgroups.coordinator.delayed_operations import NEW_MEMBER_JOIN_TIMEOUT_MS
from kgroups.coordinator.timers import TimerKind

from .harness import Harness


def members(h: Harness) -> list[str]:
    group = h.shard.group("g")
    return [] if group is None else [m.member_id for m in group.members]


def state(h: Harness) -> GroupState:
    group = h.shard.group("g")
    assert group is not None
    return group.state


def member_timers(h: Harness) -> set[str]:
    return {k.member_id for k in h.shard._timers._entries if k.kind is TimerKind.MEMBER}


# -- sessions ----------------------------------------------------------------


def test_a_silent_member_expires_after_its_session_timeout() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    h.advance(9_999)
    h.heartbeat("g", a, gen)
    assert members(h) == [a, b]
    h.advance(1)
    assert members(h) == [a]
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.heartbeat("g", a, gen) is ErrorCode.rebalance_in_progress
    response = h.reply(h.join("g", a))
    assert response.generation_id == gen + 1
    assert [m.member_id for m in response.members] == [a]


def test_heartbeats_keep_a_member_alive_indefinitely() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    for _ in range(50):
        h.advance(9_000)
        assert h.heartbeat("g", a, gen) is ErrorCode.none
    assert members(h) == [a]


def test_offset_commits_keep_a_member_alive() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    for i in range(5):
        h.advance(9_000)
        assert h.commit("g", {("t", 0): i}, member_id=a, generation=gen) == {
            ("t", 0): ErrorCode.none
        }
    assert members(h) == [a]


def test_a_member_parked_in_a_rebalance_does_not_expire() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    parked = h.join("g", a)  # waits for b, which keeps heartbeating
    for _ in range(5):
        h.advance(5_000)
        h.heartbeat("g", b, gen)
    assert members(h) == [a, b]
    h.join("g", b)
    assert h.reply(parked).generation_id == gen + 1


def test_the_last_member_expiring_empties_the_group() -> None:
    h = Harness()
    h.form_group("g", 1)
    h.advance(10_000)
    assert state(h) is GroupState.EMPTY
    assert member_timers(h) == set()


def test_members_that_expire_while_parked_in_sync_are_not_expired() -> None:
    h = Harness()
    joins = [h.join_new("g") for _ in range(2)]
    h.advance(6000)
    (a, _), (b, _) = joins
    parked = h.sync("g", b, 1)
    h.advance(9_000)
    h.heartbeat("g", a, 1)
    h.advance(9_000)
    h.heartbeat("g", a, 1)
    assert members(h) == [a, b]
    h.sync("g", a, 1, {b: b"B"})
    assert h.reply(parked).assignment == b"B"


# -- the join phase ------------------------------------------------------------


def test_a_rebalance_completes_at_the_rebalance_timeout_without_missing_members() -> None:
    h = Harness()
    (a, b, c), gen = h.form_group("g", 3)
    parked = h.join("g", a)
    h.join("g", b)
    for _ in range(5):
        h.advance(5_000)
        h.heartbeat("g", c, gen)  # alive, but never rejoins
    assert h.reply(parked) is None
    h.advance(5_000)  # 30 s: the rebalance timeout
    response = h.reply(parked)
    assert response.generation_id == gen + 1
    assert {m.member_id for m in response.members} == {a, b}
    assert h.heartbeat("g", c, gen) is ErrorCode.unknown_member_id


def test_the_rebalance_timeout_is_the_largest_of_the_members() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    parked = h.join("g", b, rebalance=50_000, protocols=(("range", b"new"),))
    for _ in range(9):
        h.advance(5_000)
        h.heartbeat("g", a, gen)
    assert h.reply(parked) is None  # 45 s: past a's 30 s, within b's 50 s
    h.advance(5_000)
    assert [m.member_id for m in h.reply(parked).members] == [b]


def test_a_new_member_whose_join_stays_parked_times_out() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    newcomer_id = h.reply(h.join("g", rebalance=900_000)).member_id
    newcomer = h.join("g", newcomer_id, rebalance=900_000)  # starts a 15-minute rebalance
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 5_000 - 1):
        h.advance(5_000)
        h.heartbeat("g", a, gen)
        h.heartbeat("g", b, gen)  # a and b stay alive but never rejoin
    assert h.reply(newcomer) is None
    h.advance(5_000)
    response = h.reply(newcomer)
    assert response.error_code is ErrorCode.unknown_member_id
    assert newcomer_id not in members(h)


# -- the initial delay ---------------------------------------------------------


def test_a_lone_member_waits_exactly_the_initial_delay() -> None:
    h = Harness()
    _, token = h.join_new("g")
    h.advance(2_999)
    assert h.reply(token) is None
    h.advance(1)
    assert h.reply(token).generation_id == 1


def test_the_initial_delay_extends_while_members_keep_arriving() -> None:
    h = Harness()
    _, first = h.join_new("g")
    h.advance(2_000)
    h.join_new("g")  # arrives during the first delay
    h.advance(1_000)
    assert h.reply(first) is None  # extended by another delay
    h.advance(2_999)
    assert h.reply(first) is None
    h.advance(1)
    assert h.reply(first).generation_id == 1


def test_the_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    h = Harness(CoordinatorConfig(initial_rebalance_delay_ms=3_000))
    _, token = h.join_new("g", rebalance=10_000)
    start = h.now
    while h.reply(token) is None:  # a newcomer every half second, forever
        h.join_new("g", rebalance=10_000)
        h.advance(500)
    # Delays of 3000 + 3000 + 3000 + 1000: exactly the rebalance timeout.
    assert h.now - start == 10_000


def test_the_initial_delay_does_not_extend_after_the_first_generation() -> None:
    h = Harness()
    (a,), _ = h.form_group("g", 1)
    h.leave("g", (a, None))
    assert state(h) is GroupState.EMPTY
    _, token = h.join_new("g")
    h.advance(2_000)
    h.join_new("g")
    h.advance(1_000)
    assert h.reply(token) is not None


def test_an_initial_delay_of_zero_completes_at_once() -> None:
    h = Harness(CoordinatorConfig(initial_rebalance_delay_ms=0))
    _, token = h.join_new("g")
    h.advance(0)
    assert h.reply(token).generation_id == 1


# -- SyncGroup deadlines -------------------------------------------------------


def test_followers_that_never_sync_are_removed_at_the_rebalance_timeout() -> None:
    h = Harness()
    joins = [h.join_new("g") for _ in range(3)]
    h.advance(6000)
    (a, _), (b, _), (c, _) = joins
    h.sync("g", a, 1, {a: b"A", b: b"B", c: b"C"})
    h.sync("g", b, 1)
    for _ in range(4):  # everyone heartbeats, but c never asks for its assignment
        h.advance(9_999)
        for m in (a, b, c):
            h.heartbeat("g", m, 1)
    assert members(h) == [a, b]
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_a_leader_that_never_syncs_is_removed_and_waiting_followers_rejoin() -> None:
    h = Harness()
    joins = [h.join_new("g", rebalance=8_000) for _ in range(2)]
    h.advance(6000)
    (_a, _), (b, _) = joins
    parked = h.sync("g", b, 1)
    h.advance(8_000)
    assert h.reply(parked).error_code is ErrorCode.rebalance_in_progress
    assert members(h) == [b]


def test_no_sync_deadline_once_everyone_synced() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    assert not [k for k in h.shard._timers._entries if k.kind is TimerKind.SYNC]
    for _ in range(10):
        h.advance(9_000)
        h.heartbeat("g", a, gen)
        h.heartbeat("g", b, gen)
    assert state(h) is GroupState.STABLE


# -- pending members -----------------------------------------------------------


def test_a_pending_member_that_never_joins_is_forgotten_after_its_session() -> None:
    h = Harness()
    (a,), gen = h.form_group("g", 1)
    pending = h.reply(h.join("g", session=7_000)).member_id
    rejoin = h.join("g", a)
    h.advance(6_999)
    assert h.reply(rejoin) is None  # the phase waits for the pending member
    h.advance(1)
    assert h.reply(rejoin).generation_id == gen + 1
    assert h.reply(h.join("g", pending)).error_code is ErrorCode.unknown_member_id


def test_a_pending_member_that_joins_has_its_pending_deadline_replaced() -> None:
    h = Harness()
    pending = h.reply(h.join("g", session=7_000)).member_id
    token = h.join("g", pending, session=7_000)
    h.advance(7_000)  # the pending deadline would have fired here
    assert h.reply(token).generation_id == 1
    assert members(h) == [pending]


# -- no timers for the departed ------------------------------------------------


def test_members_that_leave_keep_no_timers() -> None:
    h = Harness()
    (a, b, c), _ = h.form_group("g", 3)
    assert member_timers(h) == {a, b, c}
    h.leave("g", (b, None))
    assert member_timers(h) == {a, c}
    h.leave("g", (a, None), (c, None))
    assert member_timers(h) == set()
    assert h.shard.next_deadline_ms() is None or state(h) is GroupState.EMPTY


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_member_added_without_the_member_id_round_times_out_too(version: int) -> None:
    # JoinGroup v0-v3 adds the member at once (no MEMBER_ID_REQUIRED); Kafka
    # bounds its parked join by NewMemberJoinTimeoutMs all the same.
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    # A 15-minute rebalance (v0 has no rebalance timeout: its session timeout serves).
    newcomer = h.join("g", session=900_000, rebalance=900_000, version=version)
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 5_000 - 1):
        h.advance(5_000)
        h.heartbeat("g", a, gen)
        h.heartbeat("g", b, gen)  # a and b stay alive but never rejoin
    assert h.reply(newcomer) is None
    h.advance(5_000)
    response = h.reply(newcomer)
    assert response.error_code is ErrorCode.unknown_member_id
    assert len(members(h)) == 2
