"""The transaction coordinator, hosted: a TransactionCoordinatorShard per
`__transaction_state` partition, on the same runtime as the group shards
(loading, appends and their fsync, replies, timers: ShardRuntime).

What it adds: the markers of a transaction whose Prepare record is durable
are handed to the broker's marker writer (``handlers/marker_routes.py``: in
process for partitions led here, WriteTxnMarkers to the leaders of the
others) and reported back to the shard, which then writes the Complete
record or retries. A shard loaded with prepared transactions sends their
markers again. In a cluster the coordinator of a transactional id is the
leader of its `__transaction_state` partition, and moves with it as a group's
coordinator moves with its `__consumer_offsets` partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.errors import ErrorCode, KafkaError
from kgroups.runtime.coordinator_driver import TIMED_OUT, CoordinatorDriver
from kgroups.runtime.pending_writes import EVERYTHING
from kgroups.runtime.shard_runtime import Reply, ShardRuntime
from kgroups.topics.placement import TRANSACTION_STATE_TOPIC, partition_for_group
from kgroups.transactions.config import TransactionConfig
from kgroups.transactions.result import TxnMarkers

if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.context import RequestContext
    from kgroups.transactions.result import TxnResult
    from kgroups.transactions.shard import TransactionCoordinatorShard

log = logging.getLogger(__name__)

# The AddPartitionsToTxn version a partition leader verifies with (KIP-890).
_VERIFY_VERSION = 4

TxnHandler: TypeAlias = (
    "Callable[[TransactionCoordinatorShard, CoordinatorContext, int], TxnResult]"
)
# Writes markers to their partitions; per TxnMarkers, each partition's error
# (txn_markers.write_coordinator_markers).
MarkerWriter = Callable[[list[TxnMarkers]], Awaitable[list[dict[tuple[str, int], ErrorCode]]]]


# The shard is named as a string: it and its messages are imported with the
# first shard (the first transactional request or `__transaction_state` load).
class TransactionRuntime(ShardRuntime["TransactionCoordinatorShard"]):
    def __init__(self, broker: BrokerCore, write_markers: MarkerWriter) -> None:
        self._write_markers_to = write_markers
        cfg = broker.config
        self.config = TransactionConfig.from_settings(cfg.get_int)
        super().__init__(
            broker,
            TRANSACTION_STATE_TOPIC,
            cfg.get_int("transaction.state.log.num.partitions"),
            cfg.get_int("offsets.commit.timeout.ms"),
        )

    def coordinator_of(self, partition: int) -> int:
        """The broker coordinating the partition's transactional ids; -1 if none."""
        cluster = self._broker.cluster
        if cluster is None:
            return self._broker.broker_id if partition in self._epochs else -1
        return cluster.leader(self.topic, partition)[0]

    def ensure_topic(self) -> None:
        """Create `__transaction_state` on first use, with an empty shard per partition.

        Its topic configs are Kafka's for the transaction log, as far as a log
        here has them: no replicas, so no min.insync.replicas nor unclean
        leader election, and no compression.type (the coordinator's batches
        are written uncompressed and kept as written).
        """
        self._create_internal_topic(
            self._broker.config.get_int("transaction.state.log.segment.bytes")
        )

    def partition_for(self, transactional_id: str) -> int:
        """The id's partition (Kafka's hash, as for groups); creates the topic."""
        self.ensure_topic()
        return partition_for_group(transactional_id, self.partitions)

    def _new_shard(self, partition: int, leader_epoch: int) -> TransactionCoordinatorShard:
        from kgroups.transactions.shard import TransactionCoordinatorShard

        broker = self._broker
        shard = TransactionCoordinatorShard(
            partition,
            self.config,
            coordinator_epoch=leader_epoch,
            next_producer_id=broker.producer_ids.next_id,
            partition_exists=broker.topics.partition_exists,
        )
        return self._host(partition, shard, leader_epoch)

    async def _load(self, partition: int, shard: TransactionCoordinatorShard) -> None:
        started = time.monotonic()
        latest, scanned, _open = await self._scan(partition)
        for key, value in latest.items():
            shard.replay(key, value)
        self._loading.discard(partition)
        self.load_times_ms[partition] = (time.monotonic() - started) * 1000
        self._submit(partition, shard.finish_load(self._broker.clock.now_ms()))
        if scanned:
            log.info(
                "loaded %s-%d: %d records, %d live ids",
                TRANSACTION_STATE_TOPIC,
                partition,
                scanned,
                len(latest),
            )

    # -- requests ----------------------------------------------------------

    async def call(self, transactional_id: str, ctx: RequestContext, handler: TxnHandler) -> Any:
        """Run one handler on the id's shard; the answer once it is due."""
        return await self.call_partition(self.partition_for(transactional_id), ctx, handler)

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        topic: str,
        partition: int,
    ) -> ErrorCode:
        """Whether the partition is in the producer's ongoing transaction (for
        Produce, KIP-890): NONE, else the error Kafka answers Produce with; a
        fenced producer gets INVALID_PRODUCER_EPOCH, which clients treat as
        fatal (PRODUCER_FENCED on a Produce only aborts the transaction)."""
        from kgroups.transactions.messages import AddPartitions, AddPartitionsAnswer

        try:
            shard = self.shard(self.partition_for(transactional_id))
        except KafkaError as e:
            return e.error_code
        reply = Reply(EVERYTHING, self._running_loop())
        context = CoordinatorContext(_VERIFY_VERSION, "", "", reply)
        req = AddPartitions(
            transactional_id, producer_id, producer_epoch, ((topic, partition),), verify_only=True
        )
        self._submit(shard.partition, shard.add_partitions(req, context, self._now()))
        answer = await reply
        if answer is TIMED_OUT or not isinstance(answer, AddPartitionsAnswer):
            return ErrorCode.request_timed_out
        error = answer.errors.get((topic, partition), ErrorCode.none)
        if error in (ErrorCode.transaction_abortable, ErrorCode.invalid_producer_id_mapping):
            return ErrorCode.invalid_txn_state
        if error is ErrorCode.producer_fenced:
            return ErrorCode.invalid_producer_epoch
        return error

    def shards(self) -> list[TransactionCoordinatorShard]:
        return [self._shards[p] for p in self.served_partitions()]

    def _now(self) -> int:
        return self._broker.clock.now_ms()

    # -- markers -------------------------------------------------------------

    def _markers_due(self, partition: int, driver: CoordinatorDriver) -> None:
        markers = [m for m in driver.markers if isinstance(m, TxnMarkers)]
        driver.markers.clear()
        self._tasks.start(
            self._write_markers(partition, driver, markers), f"markers of partition {partition}"
        )

    async def _write_markers(
        self, partition: int, driver: CoordinatorDriver, markers: list[TxnMarkers]
    ) -> None:
        """Write the markers to their partitions, then tell the shard how it went."""
        await asyncio.sleep(0)  # after the turn that made them durable
        results = await self._write_markers_to(markers)
        if self._stopped or self._drivers.get(partition) is not driver:
            return  # the shard is gone: its successor sends them again
        shard = self._shards[partition]
        for txn, errors in zip(markers, results, strict=True):
            result = shard.markers_written(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, errors, self._now()
            )
            self._submit(partition, result)
