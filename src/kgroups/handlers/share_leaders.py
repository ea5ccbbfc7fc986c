"""Where a share partition's leader is, for the answers of ShareFetch and
ShareAcknowledge: Kafka 4.2 names the current leader (its id and leader
epoch) of a partition answered NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH, and lists those leaders' endpoints, so that the
consumer goes there without reading the metadata first."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import own_address
from kgroups.partitions.log import NotInMemory

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

MOVED = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})


def current_leader(
    broker: BrokerApi, topic_id: uuid.UUID | None, partition: int
) -> tuple[int, int]:
    """The partition's leader and leader epoch; (-1, -1) if not known."""
    topic = None if topic_id is None else broker.topics.by_id(topic_id)
    if topic is None:
        return -1, -1
    cluster = broker.cluster
    if cluster is not None:
        return cluster.leader(topic.name, partition)
    epoch = -1
    with contextlib.suppress(KafkaError, NotInMemory):
        epoch = broker.partitions.log(topic.name, partition).leader_epoch
    return broker.broker_id, epoch


def endpoints(
    broker: BrokerApi, listener: str, leader_ids: Iterable[int]
) -> list[tuple[int, str, int]]:
    """Each live leader's (id, host, port) for the clients of ``listener``."""
    out = []
    for node in sorted(set(leader_ids)):
        if node < 0:
            continue
        if node == broker.broker_id:
            out.append((node, *own_address(broker, listener)))
            continue
        address = None if broker.cluster is None else broker.cluster.address(node, listener)
        if address is not None:
            out.append((node, *address))
    return out
