"""A client's rate over Kafka's sampled windows, and the throttle time that
brings it back under its bound, on virtual time."""

from __future__ import annotations

import pytest

from kgroups.quotas.rate import WindowedRate, throttle_ms

NUM, WINDOW = 11, 1000


def test_a_first_burst_is_measured_over_all_windows_but_one() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(10_000, 0)
    # 10 windows of 1 s at least, not the milliseconds since the burst.
    assert rate.window_span_ms(0) == 10_000
    assert rate.per_second(0) == pytest.approx(1000)


def test_a_steady_rate_is_measured_as_it_is() -> None:
    rate = WindowedRate(NUM, WINDOW)
    for second in range(30):
        for tenth in range(10):
            rate.record(100, second * 1000 + tenth * 100)
    now = 29_900
    assert rate.per_second(now) == pytest.approx(1000, rel=0.1)


def test_over_the_bound_the_throttle_is_the_time_to_fall_back() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(20_000, 0)  # 2000/s over the 10 s span, bound 1000/s
    assert throttle_ms(rate, 1000, 0) == 10_000
    # (rate - bound) / bound * span: waiting that long, the sum spreads to the bound.
    rate = WindowedRate(NUM, WINDOW)
    rate.record(11_000, 0)
    assert throttle_ms(rate, 1000, 0) == 1000


def test_within_the_bound_there_is_no_throttle() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(10_000, 0)
    assert throttle_ms(rate, 1000, 0) == 0


def test_samples_age_out() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(50_000, 0)
    assert throttle_ms(rate, 1000, 0) > 0
    # Past quota.window.num windows without events the old sample is cleared.
    assert rate.per_second(NUM * WINDOW) == 0
    assert throttle_ms(rate, 1000, NUM * WINDOW) == 0


def test_a_bound_of_zero_throttles_any_use_for_as_long_as_the_field_holds() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(1, 0)
    assert throttle_ms(rate, 0, 0) == 2**31 - 1


def test_an_unrecorded_value_no_longer_counts() -> None:
    rate = WindowedRate(NUM, WINDOW)
    rate.record(5000, 0)
    rate.record(20_000, 10)
    rate.record(-20_000, 10)
    assert rate.per_second(10) == pytest.approx(5000 / 10.010)
