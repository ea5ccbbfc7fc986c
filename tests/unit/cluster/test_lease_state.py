"""What a broker believes about its lease, on virtual time."""

from __future__ import annotations

import pytest

from kgroups.clock import ManualClock
from kgroups.cluster.lease_state import LeaderView, LeaseState


def registered(clock: ManualClock) -> LeaseState:
    state = LeaseState(1, clock, heartbeat_interval_ms=2000, session_timeout_ms=9000)
    state.registered(lease_epoch=3, sent_at_ms=clock.now_ms())
    return state


def test_renewals_are_due_every_heartbeat_interval() -> None:
    clock = ManualClock()
    state = registered(clock)
    assert not state.renew_due()
    clock.advance(1999)
    assert not state.renew_due()
    clock.advance(1)
    assert state.renew_due()
    state.renewed(state.renew_sent())
    assert not state.renew_due()
    assert state.next_renew_at_ms() == clock.now_ms() + 2000


def test_writes_stop_a_margin_before_the_store_could_expire_the_lease() -> None:
    clock = ManualClock()
    state = registered(clock)
    state.observe([LeaderView("t", 0, 1, 3, 7)])
    sent = state.renew_sent()
    clock.advance(5000)  # the answer took long: validity counts from the sending
    state.renewed(sent)
    assert state.valid_until_ms() == sent + 9000 - 1000
    clock.advance(2999)
    assert state.leader_epoch("t", 0) == 7
    clock.advance(1)
    # The store keeps the lease until at least sent + 9000 on its own clock.
    assert not state.may_write()
    assert state.leader_epoch("t", 0) is None
    state.renewed(state.renew_sent())  # an acknowledged renewal makes it writable again
    assert state.leader_epoch("t", 0) == 7


def test_a_late_answer_to_an_old_renewal_does_not_shorten_the_lease() -> None:
    clock = ManualClock()
    state = registered(clock)
    old = state.renew_sent()
    clock.advance(2000)
    state.renewed(state.renew_sent())
    state.renewed(old)
    assert state.valid_until_ms() == clock.now_ms() + 8000


def test_a_lost_lease_drops_every_partition_until_leadership_is_given_again() -> None:
    clock = ManualClock()
    state = registered(clock)
    change = state.observe([LeaderView("t", 0, 1, 3, 7), LeaderView("t", 1, 2, 5, 4)])
    assert change.gained == {("t", 0): 7} and change.lost == frozenset()
    assert state.lease_lost() == frozenset({("t", 0)})
    assert state.leader_epoch("t", 0) is None and not state.renew_due()
    state.registered(lease_epoch=4, sent_at_ms=clock.now_ms())
    # The store still names the old incarnation (lease epoch 3): not this one's.
    assert state.observe([LeaderView("t", 0, 1, 3, 7)]).gained == {}
    assert state.observe([LeaderView("t", 0, 1, 4, 8)]).gained == {("t", 0): 8}


def test_a_new_leader_epoch_is_both_lost_and_gained() -> None:
    state = registered(ManualClock())
    state.observe([LeaderView("t", 0, 1, 3, 7)])
    change = state.observe([LeaderView("t", 0, 1, 3, 8)])
    assert change.gained == {("t", 0): 8} and change.lost == {("t", 0)}
    assert state.observe([LeaderView("t", 0, 2, 9, 9)]).lost == {("t", 0)}


def test_the_session_must_outlast_a_heartbeat_and_the_margin() -> None:
    with pytest.raises(ValueError):
        LeaseState(1, ManualClock(), heartbeat_interval_ms=2000, session_timeout_ms=3000)


def test_past_its_validity_the_broker_leads_nothing_even_by_an_older_read() -> None:
    """A view of the leaders read before the lease ran out, applied after,
    gives this broker no partition to serve."""
    clock = ManualClock()
    state = registered(clock)
    state.observe([LeaderView("t", 0, 1, 3, 7)])
    assert state.leading() == {("t", 0): 7}
    clock.advance(8000)  # 9000 - margin (1000): no renewal acknowledged since
    assert state.leading() == {}
    assert state.leader_epoch("t", 0) is None
    state.observe([LeaderView("t", 0, 1, 3, 7)])  # a read that was in flight
    assert state.leading() == {}
    state.renewed(state.renew_sent())  # the store answers again
    assert state.leading() == {("t", 0): 7}
