"""The plugin's `kafka_clock`: a test moves the broker's time by hand, and a
consumer group member's session expires without waiting for it."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TEST = """
import time

from confluent_kafka import Consumer


def test_member_expires_after_advance(kafka_broker, kafka_clock, kafka_helpers):
    kafka_helpers.create_topic("orders")
    assigned = []
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                         "group.id": "billing", "session.timeout.ms": 45000,
                         "heartbeat.interval.ms": 200})
    consumer.subscribe(["orders"], on_assign=lambda c, ps: assigned.append(ps))
    deadline = time.monotonic() + 20
    while not assigned and time.monotonic() < deadline:
        consumer.poll(0.1)
    assert len(assigned) == 1

    kafka_clock.advance(46_000)  # past session.timeout.ms: the member expires now
    while len(assigned) < 2 and time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()
    assert len(assigned) == 2  # expired, joined again with a new member id
"""


def test_kafka_clock_expires_a_member_without_waiting(pytester: pytest.Pytester) -> None:
    pytest.importorskip("confluent_kafka")
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=1)
