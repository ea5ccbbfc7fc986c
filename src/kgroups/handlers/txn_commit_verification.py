"""TxnOffsetCommit verified with the transaction coordinator (KIP-890), as
Kafka 4.x's group coordinator does before its first transactional write.

AddOffsetsToTxn puts the group's `__consumer_offsets` partition in the
transaction. A TxnOffsetCommit that reaches the group coordinator after its
transaction ended (delayed in the network, or sent by a zombie producer)
would otherwise open a transaction on that partition that no marker will
ever end: the group's offsets would stay pending, OffsetFetch with
require_stable would answer UNSTABLE_OFFSET_COMMIT for good, and the
partition's last stable offset, where its compaction stops, would never move
again. So when the producer has no transaction open on that partition, its
coordinator is asked, on whichever broker, whether the partition was added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.txn_offset_commit.v5 import TxnOffsetCommitRequest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.topics.placement import OFFSETS_TOPIC

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

__all__ = ["verify_txn_commit"]

# What the committer may retry, as Kafka's coordinator answers it.
_RETRIABLE = dict.fromkeys(
    (
        ErrorCode.concurrent_transactions,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.not_coordinator,
        ErrorCode.network_exception,
        ErrorCode.not_enough_replicas,
        ErrorCode.request_timed_out,
    ),
    ErrorCode.coordinator_not_available,
)


async def verify_txn_commit(broker: BrokerApi, request: TxnOffsetCommitRequest) -> ErrorCode:
    """NONE when the commit may be written, else the error to answer it with."""
    verifier = broker.transactions
    if verifier is None or not broker.config.get_bool("transaction.partition.verification.enable"):
        return ErrorCode.none
    try:
        partition = broker.coordinator.partition_for(request.group_id)
        plog = broker.partitions.log(OFFSETS_TOPIC, partition)
    except KafkaError:
        return ErrorCode.none  # not led here: the coordinator says so itself
    if plog.producers.in_transaction(request.producer_id):
        return ErrorCode.none
    error = await verifier.verify(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        OFFSETS_TOPIC,
        partition,
    )
    return _RETRIABLE.get(error, error)
