"""Acknowledgements of a ShareFetch or ShareAcknowledge, applied to one share
partition: its acknowledge error code."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.log import NotInMemory
from kgroups.share_partitions import AcknowledgementBatch, AcknowledgeType

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi


class WireBatch(Protocol):
    """ShareFetch's and ShareAcknowledge's AcknowledgementBatch."""

    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def acknowledge_types(self) -> tuple[int, ...]: ...


def acknowledge(
    broker: BrokerApi,
    group_id: str,
    member_id: str,
    topic_id: uuid.UUID,
    partition: int,
    batches: Iterable[WireBatch],
    renew_allowed: bool,
    now_ms: int,
) -> ErrorCode:
    if broker.topics.by_id(topic_id) is None:
        return ErrorCode.unknown_topic_id
    sp = broker.share_partitions.get((group_id, topic_id, partition))
    if sp is None:
        return _not_held(broker, topic_id, partition)
    sp.expire(now_ms)
    acks = [
        AcknowledgementBatch(int(b.first_offset), int(b.last_offset), tuple(b.acknowledge_types))
        for b in batches
    ]
    error = sp.acknowledge(member_id, acks, now_ms, renew_allowed)
    if error is ErrorCode.none:
        for a in acks:  # one type for the range, or one per offset, as Kafka counts them
            if len(a.types) == 1:
                broker.stats.acknowledged(a.types[0], a.last_offset - a.first_offset + 1)
            else:
                for kind in a.types:
                    broker.stats.acknowledged(kind, 1)
    if error is ErrorCode.none and any(AcknowledgeType.RELEASE in a.types for a in acks):
        broker.share_partitions.available_again((group_id, topic_id, partition))
    return error


def _not_held(broker: BrokerApi, topic_id: uuid.UUID, partition: int) -> ErrorCode:
    """Why a share partition is not here: another broker leads the topic
    partition, or nothing of it was fetched here."""
    topic = broker.topics.by_id(topic_id)
    if topic is not None and 0 <= partition < topic.partitions:
        try:
            broker.partitions.log(topic.name, partition)
        except KafkaError as e:
            return e.error_code
        except NotInMemory:
            pass
    return ErrorCode.unknown_topic_or_partition
