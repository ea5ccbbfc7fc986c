"""The timer queue: one deadline per key, cheap rescheduling, lazy cleanup."""

from __future__ import annotations

from kgroups.coordinator.timers import TimerQueue


def drain(q: TimerQueue[str, int], now: int) -> list[tuple[str, int]]:
    fired = []
    while (due := q.pop_due(now)) is not None:
        fired.append(due)
    return fired


def test_fires_in_deadline_order_only_when_due() -> None:
    q: TimerQueue[str, int] = TimerQueue()
    q.schedule("b", 20, 2)
    q.schedule("a", 10, 1)
    assert q.next_deadline() == 10
    assert drain(q, 9) == []
    assert drain(q, 20) == [("a", 1), ("b", 2)]
    assert q.next_deadline() is None
    assert len(q) == 0


def test_rescheduling_a_key_replaces_its_deadline_and_payload() -> None:
    q: TimerQueue[str, int] = TimerQueue()
    q.schedule("m", 10, 1)
    q.schedule("m", 30, 2)  # postponed: a heartbeat
    assert q.next_deadline() == 30
    assert drain(q, 29) == []
    assert drain(q, 30) == [("m", 2)]
    q.schedule("m", 50, 3)
    q.schedule("m", 40, 4)  # brought forward
    assert drain(q, 45) == [("m", 4)]
    assert drain(q, 100) == []


def test_cancelled_keys_never_fire_and_can_be_scheduled_again() -> None:
    q: TimerQueue[str, int] = TimerQueue()
    q.schedule("m", 10, 1)
    q.cancel("m")
    assert "m" not in q
    assert q.next_deadline() is None
    q.schedule("m", 15, 2)
    assert drain(q, 100) == [("m", 2)]


def test_many_heartbeats_do_not_grow_the_heap() -> None:
    q: TimerQueue[int, None] = TimerQueue()
    for member in range(1000):
        q.schedule(member, 1000, None)
    for now in range(1, 100):
        for member in range(1000):
            q.schedule(member, 1000 + now, None)  # each a little later
    assert len(q._heap) == 1000
    assert q.next_deadline() == 1099
