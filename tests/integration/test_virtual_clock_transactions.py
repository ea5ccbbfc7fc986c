"""A test on virtual time aborts an open transaction by moving the broker's
clock past the transaction's timeout, without waiting for it."""

from __future__ import annotations

import pytest

from kgroups.testing import BrokerClock, EmbeddedBroker

confluent_kafka = pytest.importorskip("confluent_kafka")


def test_advancing_the_clock_aborts_a_transaction_past_its_timeout() -> None:
    clock = BrokerClock()
    with EmbeddedBroker(clock=clock, overrides={"num.partitions": "1"}) as broker:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "transactional.id": "slow-writer",
                "transaction.timeout.ms": 60_000,
            }
        )
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce("payments", b"never-committed")
        assert producer.flush(20) == 0

        clock.advance(60_000 + 10_000 + 1)  # past the timeout and one abort check

        with pytest.raises(confluent_kafka.KafkaException) as failed:
            producer.commit_transaction(20)
        error = failed.value.args[0]
        assert (
            error.code()
            in {
                confluent_kafka.KafkaError._FENCED,
                confluent_kafka.KafkaError.PRODUCER_FENCED,
                confluent_kafka.KafkaError.INVALID_PRODUCER_EPOCH,
            }
            or error.txn_requires_abort()
        ), error
