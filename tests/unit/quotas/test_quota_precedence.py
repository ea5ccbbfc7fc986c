"""Which quota applies to a user and client id, and whose rate it measures,
in Kafka's order of precedence."""

from __future__ import annotations

import pytest

from kgroups.clock import ManualClock
from kgroups.quotas.client_quotas import ClientQuotas
from kgroups.quotas.precedence import Match, QuotaTable

KEY = "producer_byte_rate"
LEVELS = [
    ((("client-id", "app"), ("user", "alice")), 1.0, ("alice", "app")),
    ((("client-id", None), ("user", "alice")), 2.0, ("alice", "app")),
    ((("user", "alice"),), 3.0, ("alice", "")),
    ((("client-id", "app"), ("user", None)), 4.0, ("alice", "app")),
    ((("client-id", None), ("user", None)), 5.0, ("alice", "app")),
    ((("user", None),), 6.0, ("alice", "")),
    ((("client-id", "app"),), 7.0, ("", "app")),
    ((("client-id", None),), 8.0, ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_entity_set_wins(level: int) -> None:
    # Every entity from this level down is set: this level's must win.
    table = QuotaTable({entity: {KEY: bound} for entity, bound, _ in LEVELS[level:]})
    _, bound, measured = LEVELS[level]
    assert table.client_quota(KEY, "alice", "app") == Match(bound, measured)


def test_each_key_has_its_own_precedence() -> None:
    table = QuotaTable(
        {
            (("user", "alice"),): {"consumer_byte_rate": 10.0},
            (("client-id", "app"),): {KEY: 20.0},
        }
    )
    assert table.client_quota(KEY, "alice", "app") == Match(20.0, ("", "app"))
    assert table.client_quota("consumer_byte_rate", "alice", "app") == Match(10.0, ("alice", ""))
    assert table.client_quota(KEY, "bob", "other") is None


def test_a_default_gives_each_client_its_own_rate() -> None:
    quotas = ClientQuotas(ManualClock(0))
    quotas.replace({(("client-id", None),): {KEY: 1000.0}})
    assert quotas.record(KEY, "ANONYMOUS", "a", 10_000) == 0
    # Another client id under the default: its own rate, not a's.
    assert quotas.record(KEY, "ANONYMOUS", "b", 10_000) == 0
    assert quotas.record(KEY, "ANONYMOUS", "a", 10_000) == 10_000


def test_a_named_user_shares_one_rate_across_its_client_ids() -> None:
    quotas = ClientQuotas(ManualClock(0))
    quotas.replace({(("user", "alice"),): {KEY: 1000.0}})
    assert quotas.record(KEY, "alice", "a", 10_000) == 0
    assert quotas.record(KEY, "alice", "b", 10_000) == 10_000
    assert quotas.record(KEY, "bob", "a", 10_000) == 0  # no quota for bob


def test_an_address_has_its_own_connection_rate_or_the_default() -> None:
    table = QuotaTable(
        {
            (("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
            (("ip", None),): {"connection_creation_rate": 1.0},
        }
    )
    assert table.ip_quota("connection_creation_rate", "10.0.0.1") == 5.0
    assert table.ip_quota("connection_creation_rate", "10.0.0.2") == 1.0


def test_connections_over_an_address_rate_are_held_then_refused() -> None:
    clock = ManualClock(0)
    quotas = ClientQuotas(clock)
    quotas.replace({(("ip", "10.0.0.1"),): {"connection_creation_rate": 1.0}})
    accepted = [quotas.connection("10.0.0.1") == 0 for _ in range(12)]
    # 1 a second measured over 10 s: the first ten, not the rest.
    assert accepted == [True] * 10 + [False] * 2
    assert 0 < quotas.connection("10.0.0.1") <= 1000  # held at most one window
    assert quotas.connection("10.0.0.2") == 0
    clock.advance(11_000)
    assert quotas.connection("10.0.0.1") == 0


def test_a_fetch_may_take_the_quota_of_all_windows_but_one() -> None:
    quotas = ClientQuotas(ManualClock(0), window_num=11, window_ms=1000)
    quotas.replace({(("client-id", "c"),): {"consumer_byte_rate": 100.0}})
    assert quotas.most_in_window("consumer_byte_rate", "u", "c") == 1000.0
    assert quotas.most_in_window("consumer_byte_rate", "u", "other") is None


def test_request_time_throttles_one_window_at_most() -> None:
    quotas = ClientQuotas(ManualClock(0), window_num=11, window_ms=1000)
    quotas.replace({(("client-id", "c"),): {"request_percentage": 1.0, KEY: 1.0}})
    # 50 % of a loop for 10 s measured against 1 %: far over, yet one window.
    assert quotas.record("request_percentage", "u", "c", 500.0) == 1000
    assert quotas.record(KEY, "u", "c", 500.0) > 1000  # byte rates are not bounded


def test_rates_and_throttle_counts_idle_for_an_hour_are_forgotten() -> None:
    clock = ManualClock(0)
    quotas = ClientQuotas(clock)
    quotas.replace({(("client-id", None),): {KEY: 1.0}})
    for client_id in ("a", "b"):
        ms = quotas.record(KEY, "u", client_id, 100.0)
        quotas.throttled(KEY, "u", client_id, ms)
    assert set(quotas.throttles) == {(KEY, "u", "a"), (KEY, "u", "b")}
    clock.advance(3_600_000)
    quotas.throttled(KEY, "u", "b", quotas.record(KEY, "u", "b", 100.0))
    assert set(quotas.throttles) == {(KEY, "u", "b")}
