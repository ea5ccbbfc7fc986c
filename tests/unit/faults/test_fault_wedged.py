"""The watchdog of librdkafka's main thread judges only polls that emptied
the client's queue."""

from __future__ import annotations

import pytest
from faults import wedged
from faults.wedged import MainThreadWatch


def test_no_statistics_for_long_after_a_draining_poll_is_wedged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(wedged.time, "monotonic", lambda: now[0])
    watch = MainThreadWatch()
    now[0] += wedged.WEDGED_S + 1
    assert not watch.wedged(drained=False)  # statistics may wait behind records
    assert watch.wedged(drained=True)
    watch.config()["stats_cb"]("{}")
    assert not watch.wedged(drained=True)
