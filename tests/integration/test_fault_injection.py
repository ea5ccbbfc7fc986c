"""EmbeddedBroker.faults, seen by a real client (confluent-kafka): what it
does when the coordinator errs or moves, answers are slow or lost, appends
fail, a partition is paused, a group is made to rebalance or a member to
expire."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kgroups.protocol import apis
from kgroups.testing import EmbeddedBroker
from kgroups.testing.faults import FaultRefused
from kgroups.testing.helpers import KafkaHelpers


@pytest.fixture
def broker() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def _requests(broker: EmbeddedBroker, api: int) -> int:
    impl = broker._impl
    assert impl.broker is not None  # type: ignore[union-attr]
    count: int = impl.broker.stats.requests[api]  # type: ignore[union-attr]
    return count


def _consumer(broker: EmbeddedBroker, group: str, **extra: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
            **extra,
        }
    )


def _poll_values(consumer: Consumer, count: int, timeout: float = 20) -> list[bytes]:
    deadline = time.monotonic() + timeout
    values: list[bytes] = []
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and message.error() is None:
            values.append(message.value())
    return values


def _until(condition: Callable[[], bool], consumer: Consumer | None, timeout: float = 20) -> bool:
    """Poll the consumer (which runs its callbacks) until the condition holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if consumer is not None:
            consumer.poll(0.1)
        else:
            time.sleep(0.05)
    return condition()


def test_group_survives_a_coordinator_error_and_commits_after_clear(
    broker: EmbeddedBroker,
) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("orders")
    helpers.produce("orders", [b"1", b"2"])
    consumer = _consumer(broker, "billing")
    try:
        consumer.subscribe(["orders"])
        assert _poll_values(consumer, 2) == [b"1", b"2"]
        consumer.commit(asynchronous=False)

        broker.faults.coordinator_error(group="billing", error="NOT_COORDINATOR")
        found_before = _requests(broker, apis.FIND_COORDINATOR)
        helpers.produce("orders", [b"3"])
        # Fetching goes on; the group's heartbeats send the client looking
        # for its coordinator again.
        assert _poll_values(consumer, 1) == [b"3"]
        assert _until(lambda: _requests(broker, apis.FIND_COORDINATOR) > found_before + 1, consumer)

        broker.faults.clear()
        helpers.produce("orders", [b"4"])
        assert _poll_values(consumer, 1) == [b"4"]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    fresh = _consumer(broker, "billing")
    try:
        [committed] = fresh.committed([TopicPartition("orders", 0)], 20)
        assert committed.offset == 4
    finally:
        fresh.close()


def test_no_group_forms_while_the_coordinator_is_unavailable(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("orders")
    helpers.produce("orders", [b"1"])
    broker.faults.coordinator_error(error="COORDINATOR_NOT_AVAILABLE")  # every group
    consumer = _consumer(broker, "late")
    try:
        consumer.subscribe(["orders"])
        assert _poll_values(consumer, 1, timeout=3) == []
        assert consumer.assignment() == []
        broker.faults.clear()
        assert _poll_values(consumer, 1) == [b"1"]
    finally:
        consumer.close()


def test_a_moved_coordinator_keeps_the_group_and_its_offsets(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("orders")
    helpers.produce("orders", [b"1", b"2"])
    consumer = _consumer(broker, "billing")
    try:
        consumer.subscribe(["orders"])
        assert _poll_values(consumer, 2) == [b"1", b"2"]
        consumer.commit(asynchronous=False)
        broker.faults.move_coordinator("billing")
        helpers.produce("orders", [b"3"])
        assert _poll_values(consumer, 1) == [b"3"]
        consumer.commit(asynchronous=False)
        [committed] = consumer.committed([TopicPartition("orders", 0)], 20)
        assert committed.offset == 3
    finally:
        consumer.close()


def test_delayed_fetch_answers_arrive_late(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("slow")
    helpers.produce("slow", [b"v"])
    broker.faults.delay("Fetch", ms=1500)
    consumer = _consumer(broker, "slow-reader")
    try:
        consumer.assign([TopicPartition("slow", 0, 0)])
        started = time.monotonic()
        assert _poll_values(consumer, 1) == [b"v"]
        assert time.monotonic() - started >= 1.4
    finally:
        consumer.close()


def test_a_dropped_produce_answer_is_retried_without_a_duplicate(
    broker: EmbeddedBroker,
) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("payments")
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": True,
            "request.timeout.ms": 1000,
            "socket.timeout.ms": 1500,
        }
    )
    producer.produce("payments", b"warm-up", partition=0)
    assert producer.flush(20) == 0
    broker.faults.drop("Produce", count=1)
    errors: list[object] = []
    producer.produce("payments", b"once", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert producer.flush(30) == 0
    assert errors == [None]
    assert broker.faults.describe()["drops"] == {}  # the one answer was dropped
    assert helpers.read("payments", 3, timeout=3) == [b"warm-up", b"once"]


def test_failed_appends_fail_the_produce_until_cleared(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("disk")
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "retries": 0, "acks": "all"}
    )
    errors: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _message: object) -> None:
        errors.append(error)

    broker.faults.fail_appends("disk")
    producer.produce("disk", b"lost", partition=0, on_delivery=delivered)
    producer.flush(20)
    assert [e.code() if e else None for e in errors] == [KafkaError.KAFKA_STORAGE_ERROR]

    broker.faults.clear()
    producer.produce("disk", b"kept", partition=0, on_delivery=delivered)
    assert producer.flush(20) == 0
    assert errors[1] is None
    assert helpers.read("disk", 2, timeout=3) == [b"kept"]


def test_failed_appends_everywhere_fail_offset_commits(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("orders")
    helpers.produce("orders", [b"1"])
    consumer = _consumer(broker, "billing")
    try:
        consumer.subscribe(["orders"])
        assert _poll_values(consumer, 1) == [b"1"]
        broker.faults.fail_appends()
        with pytest.raises(KafkaException):
            consumer.commit(asynchronous=False)
        broker.faults.clear()
        # The client may have given its assignment up meanwhile: once it is
        # back in the group, commits work again.
        assert _until(lambda: _commits(consumer, [TopicPartition("orders", 0, 1)]), consumer)
        [committed] = consumer.committed([TopicPartition("orders", 0)], 20)
        assert committed.offset == 1
    finally:
        consumer.close()


def _commits(consumer: Consumer, offsets: list[TopicPartition]) -> bool:
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    except KafkaException:
        return False
    return True


def test_a_paused_partition_returns_nothing_until_resumed(broker: EmbeddedBroker) -> None:
    helpers = KafkaHelpers(broker.bootstrap_servers)
    helpers.create_topic("two", partitions=2)
    helpers.produce("two", [b"p0"], partition=0)
    helpers.produce("two", [b"p1"], partition=1)
    broker.faults.pause_partition("two", 0)
    consumer = _consumer(broker, "reader")
    try:
        consumer.assign([TopicPartition("two", 0, 0), TopicPartition("two", 1, 0)])
        assert _poll_values(consumer, 2, timeout=3) == [b"p1"]
        broker.faults.resume_partition("two", 0)
        assert _poll_values(consumer, 1) == [b"p0"]
    finally:
        consumer.close()


def test_forced_rebalance_runs_the_consumers_rebalance_callbacks(
    broker: EmbeddedBroker,
) -> None:
    KafkaHelpers(broker.bootstrap_servers).create_topic("orders")
    assigned: list[int] = []
    revoked: list[int] = []
    consumer = _consumer(broker, "billing")
    try:
        consumer.subscribe(
            ["orders"],
            on_assign=lambda c, ps: assigned.append(len(ps)),
            on_revoke=lambda c, ps: revoked.append(len(ps)),
        )
        assert _until(lambda: assigned == [1], consumer)
        broker.faults.force_rebalance("billing")
        assert _until(lambda: len(assigned) == 2, consumer)
        assert revoked[:1] == [1]
    finally:
        consumer.close()


def test_an_expired_member_rejoins_with_a_new_member_id(broker: EmbeddedBroker) -> None:
    KafkaHelpers(broker.bootstrap_servers).create_topic("orders")
    assigned: list[int] = []
    consumer = _consumer(broker, "billing")
    try:
        consumer.subscribe(["orders"], on_assign=lambda c, ps: assigned.append(len(ps)))
        assert _until(lambda: assigned == [1], consumer)
        member = consumer.memberid()
        broker.faults.expire_member("billing", member)
        # Its next heartbeat gets UNKNOWN_MEMBER_ID: it joins again as a new member.
        assert _until(lambda: consumer.memberid() not in (member, None, ""), consumer)
        assert _until(lambda: len(assigned) >= 2, consumer)
        with pytest.raises(FaultRefused, match="UNKNOWN_MEMBER_ID"):
            broker.faults.expire_member("billing", member)
    finally:
        consumer.close()


def test_unknown_names_are_refused(broker: EmbeddedBroker) -> None:
    with pytest.raises(FaultRefused):
        broker.faults.force_rebalance("no-such-group")
    with pytest.raises(FaultRefused):
        broker.faults.delay("NoSuchApi", ms=10)
    with pytest.raises(FaultRefused):
        broker.faults.coordinator_error(error="OFFSET_OUT_OF_RANGE")
    assert broker.faults.describe()["delays_ms"] == {}


def test_an_expired_kip848_member_is_fenced_and_joins_again() -> None:
    overrides = {
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "100",
    }
    with EmbeddedBroker(overrides=overrides) as broker:
        KafkaHelpers(broker.bootstrap_servers).create_topic("orders")
        assigned: list[int] = []
        lost: list[int] = []
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "kip848",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe(
                ["orders"],
                on_assign=lambda c, ps: assigned.append(len(ps)),
                on_lost=lambda c, ps: lost.append(len(ps)),
            )
            assert _until(lambda: 1 in assigned, consumer)
            broker.faults.expire_member("kip848", consumer.memberid())
            # Fenced: its partitions are lost, and it joins again at epoch 0.
            assert _until(lambda: lost == [1] and assigned.count(1) == 2, consumer)
        finally:
            consumer.close()


def test_a_broker_with_delayed_answers_stops_promptly() -> None:
    broker = EmbeddedBroker()
    try:
        KafkaHelpers(broker.bootstrap_servers).create_topic("slow")
        broker.faults.delay("Fetch", ms=600_000)
        consumer = _consumer(broker, "slow-reader")
        consumer.assign([TopicPartition("slow", 0, 0)])
        consumer.poll(1)  # a fetch is now held
    finally:
        started = time.monotonic()
        broker.stop()
        stopped_in = time.monotonic() - started
    consumer.close()
    assert stopped_in < 4
