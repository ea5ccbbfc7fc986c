"""The share coordinator, hosted: a ShareCoordinatorShard per partition of
``__share_group_state``, on the runtime the group and transaction
coordinators use (ShardRuntime: loading, appends and their fsync, replies
once durable, leadership).

The coordinator of a share partition's state is the leader of the
``__share_group_state`` partition its key (``group:topicId:partition``)
hashes to: alone, this broker; in a cluster, whichever broker leads it, and
the shard follows that leadership as the group coordinator's shards follow
``__consumer_offsets``. Loading replays every record of the partition in
order (a ShareUpdate is a change on top of the snapshot before it, so the
newest record of a key is not enough), through the shard's ``replay``.

The topic is compacted. Kafka's keeps every record and prunes, with
DeleteRecords, what comes before the oldest snapshot it still needs, since
its updates carry only what changed; a kgroups leader writes its whole
in-flight state in every write, so the newest record of a key, snapshot or
update, is all that loading needs, and compaction keeps exactly that (a
deletion tombstones both kinds of key).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.errors import KafkaError
from kgroups.partitions.log import NotInMemory, PartitionRead
from kgroups.records.batch import iter_batches, iter_key_values
from kgroups.runtime.shard_runtime import ShardRuntime
from kgroups.share_coordinator.answers import KeyAnswer, refused
from kgroups.topics.placement import SHARE_GROUP_STATE_TOPIC, partition_for_share_key

if TYPE_CHECKING:
    # The shard, and the records' codec with it, come with the first
    # partition of __share_group_state this broker leads.
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.context import RequestContext
    from kgroups.share_coordinator.shard import Key, ShareCoordinatorShard, ShareStateResult

log = logging.getLogger(__name__)

_LOAD_CHUNK_BYTES = 4 * 1024 * 1024

KeyHandler = Callable[["ShareCoordinatorShard", CoordinatorContext, int], "ShareStateResult"]


class ShareCoordinatorRuntime(ShardRuntime["ShareCoordinatorShard"]):
    def __init__(self, broker: BrokerCore) -> None:
        cfg = broker.config
        self._updates_per_snapshot = cfg.get_int(
            "share.coordinator.snapshot.update.records.per.snapshot"
        )
        self._segment_bytes = cfg.get_int("share.coordinator.state.topic.segment.bytes")
        super().__init__(
            broker,
            SHARE_GROUP_STATE_TOPIC,
            cfg.get_int("share.coordinator.state.topic.num.partitions"),
            cfg.get_int("offsets.commit.timeout.ms"),
        )

    def coordinator_of(self, partition: int) -> int:
        """The broker coordinating the partition's share partitions; -1 if none."""
        cluster = self._broker.cluster
        if cluster is None:
            return self._broker.broker_id if partition in self._epochs else -1
        return cluster.leader(self.topic, partition)[0]

    def ensure_topic(self) -> None:
        """Create ``__share_group_state`` on first use, with an empty shard
        per partition when this broker alone leads them all."""
        broker = self._broker
        if broker.topics.get(self.topic) is not None:
            return
        configs = {"cleanup.policy": "compact", "segment.bytes": str(self._segment_bytes)}
        broker.create_topic(self.topic, self.partitions, configs)
        if self._gain_all:
            for p in range(self.partitions):
                self._new_shard(p, 0)  # nothing to load

    def partition_for(self, key: Key) -> int:
        """The key's partition (Kafka's hash of ``group:topicId:partition``)."""
        topic = self._broker.topics.get(self.topic)
        partitions = self.partitions if topic is None else topic.partitions
        return partition_for_share_key(key[0], key[1], key[2], partitions)

    def _partition_exists(self, topic_id: uuid.UUID, partition: int) -> bool:
        topic = self._broker.topics.by_id(topic_id)
        return topic is not None and 0 <= partition < topic.partitions

    def _new_shard(self, partition: int, leader_epoch: int) -> ShareCoordinatorShard:
        from kgroups.share_coordinator.shard import ShareCoordinatorShard

        shard = ShareCoordinatorShard(partition, self._updates_per_snapshot, self._partition_exists)
        return self._host(partition, shard, leader_epoch)

    async def _load(self, partition: int, shard: ShareCoordinatorShard) -> None:
        started = time.monotonic()
        replayed = await self._replay_all(partition, shard)
        shard.finish_load()
        self._loading.discard(partition)
        self.load_times_ms[partition] = (time.monotonic() - started) * 1000
        if replayed:
            log.info(
                "loaded %s-%d: %d records, %d share partitions",
                self.topic,
                partition,
                replayed,
                len(shard.share_partitions()),
            )

    async def _replay_all(self, partition: int, shard: ShareCoordinatorShard) -> int:
        """Every keyed record of the partition, in log order, into the shard."""
        home = self._broker.partitions
        plog = home.log(self.topic, partition)
        offset, end = plog.log_start_offset, plog.log_end_offset
        replayed = 0
        while offset < end:
            try:
                chunk = plog.read(offset, _LOAD_CHUNK_BYTES, max_offset=end)
            except NotInMemory:  # cluster mode: older batches are in the store
                chunk = await self._read_from_home(partition, offset)
            if not chunk:
                break
            for pos, header in iter_batches(chunk):
                if header.base_offset >= end:
                    break
                if header.last_offset >= offset and not header.is_control:
                    for key, value in iter_key_values(chunk[pos : pos + header.size]):
                        if key is not None:
                            shard.replay(key, value)
                            replayed += 1
                offset = header.last_offset + 1
            await asyncio.sleep(0)  # serve other partitions' requests between chunks
        return replayed

    async def _read_from_home(self, partition: int, offset: int) -> bytes:
        home = self._broker.partitions
        (got,) = await home.read_many(
            [PartitionRead(self.topic, partition, offset, _LOAD_CHUNK_BYTES)]
        )
        if isinstance(got, KafkaError):
            raise got
        return got

    async def call(self, key: Key, ctx: RequestContext, handler: KeyHandler) -> KeyAnswer:
        """Run one handler on the key's shard; its answer once it is due
        (NOT_COORDINATOR if this broker does not hold the key's partition).
        The topic is made on first use, as the other internal topics are."""
        try:
            self.ensure_topic()
            answer: Any = await self.call_partition(self.partition_for(key), ctx, handler)
        except KafkaError as e:
            return refused(e.error_code)
        assert isinstance(answer, KeyAnswer)
        return answer

    def shards(self) -> list[ShareCoordinatorShard]:
        return [self._shards[p] for p in self.served_partitions()]
