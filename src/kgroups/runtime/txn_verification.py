"""Produce-side verification of transactions (KIP-890 part 1).

Before a producer's first transactional batch of a transaction is written to a
partition, the broker asks the transaction coordinator whether the partition
was added to that transaction; a hanging transaction (data written after its
abort) cannot then start. ``broker.transactions`` is the coordinator's side of
it: the transaction runtime itself on a broker alone, ``ClusterVerifier`` in a
cluster.
"""

from __future__ import annotations

from typing import Protocol

from kio.schema.add_partitions_to_txn.v4 import AddPartitionsToTxnRequest
from kio.schema.add_partitions_to_txn.v4.request import (
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from kio.schema.types import ProducerId, TransactionalId

from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.runtime.peer_brokers import PeerBrokers

__all__ = ["ClusterVerifier", "TransactionVerifier"]


class TransactionVerifier(Protocol):
    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode:
        """NONE if the partition is part of the producer's ongoing transaction."""
        ...


class LocalOrPeer(Protocol):
    """What ``ClusterVerifier`` needs of the transaction runtime."""

    def partition_for(self, transactional_id: str) -> int: ...

    def coordinator_of(self, partition: int) -> int:
        """The broker leading the `__transaction_state` partition; -1 if none."""
        ...

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode: ...


class ClusterVerifier:
    """In a cluster: asks the transactional id's coordinator, in process when
    it is this broker, else with AddPartitionsToTxn v4 (verify only) sent to
    its broker, as Kafka's partition leaders do."""

    def __init__(self, broker_id: int, runtime: LocalOrPeer, peers: PeerBrokers) -> None:
        self._broker_id = broker_id
        self._runtime = runtime
        self._peers = peers

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode:
        node = self._runtime.coordinator_of(self._runtime.partition_for(transactional_id))
        if node < 0:
            return ErrorCode.coordinator_not_available
        if node == self._broker_id:
            return await self._runtime.verify(
                transactional_id, producer_id, producer_epoch, topic, partition
            )
        request = AddPartitionsToTxnRequest(
            transactions=(
                AddPartitionsToTxnTransaction(
                    transactional_id=TransactionalId(transactional_id),
                    producer_id=ProducerId(producer_id),
                    producer_epoch=i16(producer_epoch),
                    verify_only=True,
                    topics=(
                        AddPartitionsToTxnTopic(
                            name=TopicName(topic), partitions=(i32(partition),)
                        ),
                    ),
                ),
            ),
        )
        try:
            response = await self._peers.send(node, request, 4, 4)
        except KafkaError as e:
            return e.error_code
        if response.error_code != ErrorCode.none:
            # Not a client's business why the brokers could not agree.
            if response.error_code == ErrorCode.cluster_authorization_failed:
                return ErrorCode.invalid_txn_state
            return ErrorCode(response.error_code)
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for p in topic_result.results_by_partition:
                    return _as_produce_error(ErrorCode(p.partition_error_code))
        return ErrorCode.none


def _as_produce_error(error: ErrorCode) -> ErrorCode:
    """A coordinator's answer, as the producer expects it (Kafka's mapping)."""
    if error is ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if error in (ErrorCode.transaction_abortable, ErrorCode.invalid_producer_id_mapping):
        return ErrorCode.invalid_txn_state
    return error
