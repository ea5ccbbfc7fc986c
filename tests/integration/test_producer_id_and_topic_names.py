"""InitProducerId without a transactional id always hands out a fresh producer
id (Kafka's TransactionCoordinator), so a client cannot take over another
client's id and epoch; Metadata answers INVALID_TOPIC_EXCEPTION for an illegal
topic name whether or not it may auto-create."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.static.primitive import i32Timedelta

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode
from kgroups.protocol.types import ProducerId, TopicName, i16

from broker_thread import BrokerThread


def _send(broker: BrokerThread, request: Any) -> Any:
    async def go() -> Any:
        cluster = ClusterClient(broker.bootstrap)
        try:
            conn = await cluster.any_connection()
            return await conn.send(request)
        finally:
            await cluster.close()

    return broker.run(go())


def _init_producer_id(broker: BrokerThread, producer_id: int, epoch: int) -> Any:
    return _send(
        broker,
        InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout=i32Timedelta.parse(datetime.timedelta(minutes=1)),
            producer_id=ProducerId(producer_id),
            producer_epoch=i16(epoch),
        ),
    )


def test_a_made_up_producer_id_and_epoch_get_a_fresh_id(broker: BrokerThread) -> None:
    victim = _init_producer_id(broker, -1, -1)
    assert (victim.error_code, victim.producer_epoch) == (ErrorCode.none, 0)
    taken = _init_producer_id(broker, victim.producer_id, victim.producer_epoch)
    assert taken.error_code == ErrorCode.none
    assert taken.producer_id != victim.producer_id
    assert taken.producer_epoch == 0
    other = _init_producer_id(broker, 123456, 7)
    assert other.producer_id not in (victim.producer_id, taken.producer_id, 123456)
    assert other.producer_epoch == 0


BAD_NAMES = ["bad topic!", "x" * 250, "a/b", ".", ".."]


@pytest.mark.parametrize("auto_create", ["true", "false"])
def test_metadata_answers_invalid_topic_for_an_illegal_name(
    tmp_path: Path, auto_create: str
) -> None:
    broker = BrokerThread(tmp_path / "data", auto_create_topics_enable=auto_create).start()
    try:
        for allow in (True, False):
            response = _send(
                broker,
                MetadataRequest(
                    topics=tuple(
                        MetadataRequestTopic(topic_id=None, name=TopicName(n)) for n in BAD_NAMES
                    ),
                    allow_auto_topic_creation=allow,
                    include_topic_authorized_operations=False,
                ),
            )
            assert {t.name: t.error_code for t in response.topics} == {
                n: ErrorCode.invalid_topic_exception for n in BAD_NAMES
            }
    finally:
        broker.stop()
