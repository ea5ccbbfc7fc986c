"""A transactional producer whose id a successor took is fenced for good when
it produces: its Produce is answered INVALID_PRODUCER_EPOCH, as Kafka's
partition leaders answer after the coordinator's PRODUCER_FENCED, and
librdkafka raises the fatal _FENCED error (librdkafka's own test 0103,
"produce after fence"). PRODUCER_FENCED on a Produce would only make the
transaction abortable, and the zombie could go on."""

from __future__ import annotations

from typing import Any

import pytest

from broker_thread import BrokerThread

pytestmark = pytest.mark.interop


def _producer(bootstrap: str, transactional_id: str) -> Any:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    p.init_transactions(30)
    return p


def test_producing_after_being_fenced_is_a_fatal_error(broker: BrokerThread) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("out", 1, 1)])["out"].result(20)
    zombie = _producer(broker.bootstrap, "fenced")
    zombie.begin_transaction()
    zombie.produce("out", b"before", partition=0)
    assert zombie.flush(30) == 0
    _producer(broker.bootstrap, "fenced")  # aborts the zombie's transaction
    zombie.produce("out", b"after", partition=0)
    with pytest.raises(KafkaException) as raised:
        zombie.flush(30)
        zombie.commit_transaction(10)
    error = raised.value.args[0]
    assert error.fatal()
    assert error.code() == KafkaError._FENCED
