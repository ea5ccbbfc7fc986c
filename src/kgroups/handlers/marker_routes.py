"""Where this broker's transaction coordinator sends its markers.

Alone, the broker leads every partition and writes them in process. In a
cluster each partition's marker goes to its leader, as Kafka's coordinator
sends them: in process when it is this broker, else in one WriteTxnMarkers
request per leader. Markers are not written into the store directly, under
the partition's leader epoch, because the leader is the partition's only
writer: it assigns offsets in memory and keeps its producers' transactions
there, and a write behind its back would end its leadership. A partition
without a live leader, or whose leader cannot be reached, reports an error
and the coordinator sends its marker again after ``retry_backoff_ms``, for
as long as it takes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

from kio.schema.types import ProducerId
from kio.schema.write_txn_markers.v2 import WriteTxnMarkersRequest
from kio.schema.write_txn_markers.v2.request import WritableTxnMarker, WritableTxnMarkerTopic

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.txn_markers import TxnMarker, write_txn_markers
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.transactions.result import TxnMarkers

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.peer_brokers import PeerBrokers

__all__ = ["write_coordinator_markers"]

Errors = dict[tuple[str, int], ErrorCode]


async def write_coordinator_markers(broker: BrokerApi, markers: list[TxnMarkers]) -> list[Errors]:
    """Per TxnMarkers, each partition's error once its leader answered."""
    wanted = [
        TxnMarker(
            m.producer_id,
            m.producer_epoch,
            m.coordinator_epoch,
            m.commit,
            tuple(sorted(m.partitions)),
        )
        for m in markers
    ]
    cluster, peers = broker.cluster, broker.peers
    if cluster is None or peers is None:
        return await write_txn_markers(broker, wanted)
    results: list[Errors] = [{} for _ in wanted]
    # Per leader, (index of the marker, the marker for that leader's partitions).
    routes: dict[int, list[tuple[int, TxnMarker]]] = {}
    for i, marker in enumerate(wanted):
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in marker.partitions:
            node, _epoch = cluster.leader(*tp)
            if node < 0:
                # No live leader: sent again later, unless the partition is gone.
                results[i][tp] = (
                    ErrorCode.not_leader_or_follower
                    if broker.topics.partition_exists(*tp)
                    else ErrorCode.unknown_topic_or_partition
                )
            else:
                by_leader.setdefault(node, []).append(tp)
        for node, tps in by_leader.items():
            routes.setdefault(node, []).append(
                (i, dataclasses.replace(marker, partitions=tuple(tps)))
            )

    async def deliver(node: int, items: list[tuple[int, TxnMarker]]) -> None:
        sent = [m for _i, m in items]
        if node == broker.broker_id:
            answers = await write_txn_markers(broker, sent)
        else:
            answers = await _send(peers, node, sent)
        for (i, _m), errors in zip(items, answers, strict=True):
            results[i].update(errors)

    await asyncio.gather(*(deliver(node, items) for node, items in routes.items()))
    return results


async def _send(peers: PeerBrokers, node: int, markers: list[TxnMarker]) -> list[Errors]:
    """The markers sent to broker ``node``; any failure to get its answer is
    that of every partition (NETWORK_EXCEPTION: sent again)."""
    request = WriteTxnMarkersRequest(
        markers=tuple(
            WritableTxnMarker(
                producer_id=ProducerId(m.producer_id),
                producer_epoch=i16(m.producer_epoch),
                transaction_result=m.commit,
                topics=tuple(
                    WritableTxnMarkerTopic(
                        name=TopicName(topic), partition_indexes=tuple(i32(p) for p in parts)
                    )
                    for topic, parts in _by_topic(m.partitions).items()
                ),
                coordinator_epoch=i32(m.coordinator_epoch),
            )
            for m in markers
        )
    )
    try:
        response = await peers.send(node, request, 1, 2)
    except KafkaError as e:
        return [dict.fromkeys(m.partitions, e.error_code) for m in markers]
    answers: list[Errors] = []
    for marker, result in zip(markers, response.markers, strict=True):
        errors: Errors = dict.fromkeys(marker.partitions, ErrorCode.network_exception)
        for topic in result.topics:
            for p in topic.partitions:
                errors[(topic.name, int(p.partition_index))] = ErrorCode(p.error_code)
        answers.append(errors)
    return answers


def _by_topic(partitions: tuple[tuple[str, int], ...]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return topics
