"""`__transaction_state` belongs to the broker, on a broker alone: clients cannot
create it with settings of their own, nor delete it, nor change its configs; the
transaction coordinator creates it with transaction.state.log.* settings, and an
open transaction outlives a client's attempt to delete it and a restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from test_transaction_coordinator_wire import (
    TXN,
    add_partitions,
    committed,
    describe,
    eventually,
    init,
)
from test_transactions_wire import _create, produce
from topic_admin_wire import create, delete, described, topic_configs

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8
from kgroups.topics.placement import TRANSACTION_STATE_TOPIC

from broker_thread import BrokerThread
from raw_wire import call_once

PARTITIONS = 3  # transaction.state.log.num.partitions; num.partitions stays 1
TRANSACTION_KEY = i8(1)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", transaction_state_log_num_partitions=PARTITIONS).start()
    try:
        yield b
    finally:
        b.stop()


def _assert_made_by_the_broker(port: int) -> None:
    topic = described(port, TRANSACTION_STATE_TOPIC)
    assert topic.error_code == ErrorCode.none
    assert topic.is_internal
    assert len(topic.partitions) == PARTITIONS
    configs = topic_configs(port, TRANSACTION_STATE_TOPIC)
    assert configs["cleanup.policy"] == "compact"
    assert configs["segment.bytes"] == "104857600"  # transaction.state.log.segment.bytes
    assert configs["retention.ms"] == "604800000"  # the broker's, not a client's


def test_create_topics_cannot_create_it(broker: BrokerThread) -> None:
    port = broker.port
    asked = [
        create(port, TRANSACTION_STATE_TOPIC, 1, cleanup_policy="delete", retention_ms="1000"),
        create(port, TRANSACTION_STATE_TOPIC, 1, validate_only=True),
        create(port, TRANSACTION_STATE_TOPIC, -1),
        # Even the coordinator's own settings: the broker alone creates it.
        create(port, TRANSACTION_STATE_TOPIC, PARTITIONS, cleanup_policy="compact"),
    ]
    assert [r.error_code for r in asked] == [ErrorCode.invalid_request] * len(asked)
    assert "internal topic __transaction_state" in (asked[0].error_message or "")
    assert described(port, TRANSACTION_STATE_TOPIC).error_code == (
        ErrorCode.unknown_topic_or_partition
    )

    # The first FindCoordinator for a transactional id makes it; then it simply exists.
    find = FindCoordinatorRequest(key_type=TRANSACTION_KEY, coordinator_keys=(TXN,))
    found = call_once(port, find)
    assert found.coordinators[0].error_code == ErrorCode.none
    again = create(port, TRANSACTION_STATE_TOPIC, 1, cleanup_policy="delete")
    assert again.error_code == ErrorCode.topic_already_exists
    _assert_made_by_the_broker(port)


def test_metadata_auto_creation_makes_it_as_the_coordinator_does(broker: BrokerThread) -> None:
    port = broker.port
    topic = described(port, TRANSACTION_STATE_TOPIC, auto_create=True)
    assert topic.error_code == ErrorCode.none
    _assert_made_by_the_broker(port)
    # Its transactions are served at once (every partition has its coordinator).
    _create(port)
    pid, epoch = init(port)
    assert add_partitions(port, pid, epoch) == ErrorCode.none


def test_delete_topics_cannot_delete_it_under_an_open_transaction(tmp_path: Path) -> None:
    broker = BrokerThread(
        tmp_path / "data",
        transaction_state_log_num_partitions=PARTITIONS,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=50,
    ).start()
    try:
        port = broker.port
        _create(port)
        pid, epoch = init(port, timeout_ms=2000)
        assert add_partitions(port, pid, epoch) == ErrorCode.none
        assert produce(port, [b"open"], pid=pid, epoch=epoch, seq=0, txn_id=TXN) == 0
        assert delete(port, TRANSACTION_STATE_TOPIC) == [ErrorCode.invalid_topic_exception] * 2
        broker.restart()
        # The coordinator still holds the transaction: past its timeout it is
        # aborted, and read_committed consumers move past it.
        eventually(lambda: describe(port).transaction_state == "CompleteAbort")
        eventually(lambda: committed(port) == ([b"open"], {(pid, 0)}))
        _assert_made_by_the_broker(port)
    finally:
        broker.stop()


def test_a_client_sees_it_refused(broker: BrokerThread) -> None:
    """What confluent_kafka's AdminClient reports for each attempt."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )

    def error_of(future: object) -> int:
        with pytest.raises(KafkaException) as raised:
            future.result()  # type: ignore[attr-defined]
        code: int = raised.value.args[0].code()
        return code

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new = NewTopic(TRANSACTION_STATE_TOPIC, 1, config={"cleanup.policy": "delete"})
    created = admin.create_topics([new], request_timeout=10)
    assert error_of(created[TRANSACTION_STATE_TOPIC]) == KafkaError.INVALID_REQUEST

    assert described(broker.port, TRANSACTION_STATE_TOPIC, auto_create=True).error_code == 0
    deleted = admin.delete_topics([TRANSACTION_STATE_TOPIC], request_timeout=10)
    assert error_of(deleted[TRANSACTION_STATE_TOPIC]) == KafkaError.TOPIC_EXCEPTION

    # Nor are its configs changed by a client.
    retention = ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("TOPIC", TRANSACTION_STATE_TOPIC, incremental_configs=[retention])
    (altered,) = admin.incremental_alter_configs([resource], request_timeout=10).values()
    assert error_of(altered) == KafkaError.INVALID_REQUEST
    _assert_made_by_the_broker(broker.port)
