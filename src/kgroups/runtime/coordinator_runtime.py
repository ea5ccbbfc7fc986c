"""The group coordinator's runtime: a GroupCoordinatorShard per
`__consumer_offsets` partition, hosted by ``ShardRuntime`` (shard_runtime.py),
plus what only groups need: the offsets topic, the partition of a group, the
heartbeats answered and the offset commits taken on the connection, topic
deletions and injected faults."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kgroups.coordinator.config import CoordinatorConfig
from kgroups.coordinator.context import RequestContext as CoordinatorContext
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.consumer_heartbeat_wire import UnchangedHeartbeat
from kgroups.runtime.coordinator_driver import (
    TIMED_OUT,
)
from kgroups.runtime.pending_writes import EVERYTHING, request_reach
from kgroups.runtime.shard_runtime import Reply, ShardRuntime
from kgroups.topics.placement import OFFSETS_TOPIC, partition_for_group

if TYPE_CHECKING:
    from kgroups.coordinator.commit_request import CommitRequest
    from kgroups.coordinator.consumer.config import ConsumerGroupConfig
    from kgroups.coordinator.result import Result
    from kgroups.coordinator.shard import GroupCoordinatorShard
    from kgroups.coordinator.share.config import ShareGroupConfig
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.runtime.context import RequestContext

log = logging.getLogger(__name__)


# The shard is named as a string: it and the coordinator it runs are imported
# with the first shard (the first group request or `__consumer_offsets` load).
class CoordinatorRuntime(ShardRuntime["GroupCoordinatorShard"]):
    """The group coordinator: a GroupCoordinatorShard per `__consumer_offsets` partition."""

    def __init__(self, broker: BrokerCore) -> None:
        cfg = broker.config
        self.config = CoordinatorConfig(
            min_session_timeout_ms=cfg.get_int("group.min.session.timeout.ms"),
            max_session_timeout_ms=cfg.get_int("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=cfg.get_int("group.initial.rebalance.delay.ms"),
            max_size=cfg.get_int("group.max.size"),
            offsets_topic_partitions=cfg.get_int("offsets.topic.num.partitions"),
            offset_metadata_max_bytes=cfg.get_int("offset.metadata.max.bytes"),
            offsets_retention_ms=cfg.get_int("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=cfg.get_int("offsets.retention.check.interval.ms"),
        )
        super().__init__(
            broker,
            OFFSETS_TOPIC,
            self.config.offsets_topic_partitions,
            cfg.get_int("offsets.commit.timeout.ms"),
        )
        # group.coordinator.rebalance.protocols lists "consumer" (KIP-848).
        self.consumer_protocol_enabled = "consumer" in cfg.rebalance_protocols()
        # ... and "share" (KIP-932; Kafka 4.2 enables it with the share.version
        # feature), alone or in a cluster: share partitions live at their topic
        # partitions' leaders, their state at the share coordinator.
        self.share_protocol_enabled = "share" in cfg.rebalance_protocols()

    @functools.cached_property
    def consumer_config(self) -> ConsumerGroupConfig:
        from kgroups.coordinator.consumer.config import ConsumerGroupConfig

        cfg = self._broker.config
        return ConsumerGroupConfig(
            session_timeout_ms=cfg.get_int("group.consumer.session.timeout.ms"),
            heartbeat_interval_ms=cfg.get_int("group.consumer.heartbeat.interval.ms"),
            max_size=cfg.get_int("group.consumer.max.size"),
            assignors=cfg.get_str("group.consumer.assignors"),
            regex_refresh_interval_ms=cfg.get_int("group.consumer.regex.refresh.interval.ms"),
            migration_policy=cfg.get_str("group.consumer.migration.policy"),
            overrides=self._broker.dynamic_configs,
        )

    @functools.cached_property
    def share_config(self) -> ShareGroupConfig:
        from kgroups.coordinator.share.config import ShareGroupConfig

        cfg = self._broker.config
        return ShareGroupConfig(
            session_timeout_ms=cfg.get_int("group.share.session.timeout.ms"),
            heartbeat_interval_ms=cfg.get_int("group.share.heartbeat.interval.ms"),
            max_size=cfg.get_int("group.share.max.size"),
            overrides=self._broker.dynamic_configs,
        )

    def ensure_offsets_topic(self) -> None:
        """Create `__consumer_offsets` on first use, with an empty, loaded shard per partition."""
        self._create_internal_topic(self._broker.config.get_int("offsets.topic.segment.bytes"))

    def _new_shard(self, partition: int, leader_epoch: int) -> GroupCoordinatorShard:
        from kgroups.coordinator.shard import GroupCoordinatorShard

        topics = self._broker.topics
        shard = GroupCoordinatorShard(
            partition,
            self.config,
            partition_exists=topics.partition_exists,
            consumer_config=self.consumer_config,
            topics=topics,
            topic_name=lambda topic_id: (
                None if (topic := topics.by_id(topic_id)) is None else topic.name
            ),
            share_config=self.share_config,
            share_events=self._broker.share_partitions,
        )
        return self._host(partition, shard, leader_epoch)

    async def _load(self, partition: int, shard: GroupCoordinatorShard) -> None:
        """Rebuild the partition's shard from its log.

        Only the newest record of each key matters (that is what compaction
        keeps), so the scan keeps the last value per key and replays just those,
        in the order of their last appearance: the same records a fully
        compacted log would hold. Loading costs a key scan per record and a
        replay per live key.
        """
        from kgroups.coordinator.txn_load import replay_loaded

        started = time.monotonic()
        latest, scanned, still_open = await self._scan(partition)
        replay_loaded(shard.replay, latest, still_open)
        self._loading.discard(partition)
        self.load_times_ms[partition] = (time.monotonic() - started) * 1000
        now = self._broker.clock.now_ms()
        self._submit(partition, shard.finish_load(now))
        if self._deleted_while_loading:
            self._submit(partition, shard.on_topics_deleted(self._deleted_while_loading, now))
            if not self._loading:
                self._deleted_while_loading.clear()
        if scanned:
            log.info(
                "loaded %s-%d: %d records, %d live keys, %d group(s) in %.3f s",
                OFFSETS_TOPIC,
                partition,
                scanned,
                len(latest),
                sum(1 for _ in shard.groups()),
                time.monotonic() - started,
            )

    def on_topic_deleted(self, topic: str) -> None:
        """Every group forgets the deleted topic's offsets, with tombstones."""
        now = self._broker.clock.now_ms()
        for partition, shard in self._shards.items():
            if partition not in self._loading:
                self._submit(partition, shard.on_topics_deleted((topic,), now))
        if self._loading:
            self._deleted_while_loading.add(topic)

    def partition_for(self, group_id: str) -> int:
        self.ensure_offsets_topic()
        return partition_for_group(group_id, self.partitions)

    async def call(
        self,
        group_id: str,
        ctx: RequestContext,
        handler: Callable[[GroupCoordinatorShard, CoordinatorContext, int], Result],
    ) -> Any:
        """Run one handler on the group's shard; the response once it is due."""
        faults = self._broker.faults
        if faults.active and (error := faults.coordinator_error_for(group_id)) is not None:
            raise KafkaError(error)
        reach = request_reach(group_id, ctx.api_key)
        return await self.call_partition(self.partition_for(group_id), ctx, handler, reach)

    def heartbeat_now(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode | None:
        """A heartbeat answered on the spot, or None when it has to go through
        ``call``: the shard says when (a write of its group is not durable yet,
        so the answer would reveal it, or the call must be journaled).

        A heartbeat only postpones or cancels its member's session deadline,
        so the partition's loop timer stays as it is (an early firing finds
        nothing due and is set again)."""
        partition = partition_for_group(group_id, self.partitions)
        shard = self._shards.get(partition)
        if shard is None or self._stopped or partition in self._failed:
            return None
        return shard.heartbeat_now(
            group_id, member_id, group_instance_id, generation_id, self._broker.clock.now_ms()
        )

    def consumer_heartbeat_now(self, hb: UnchangedHeartbeat, client_host: str) -> int | None:
        """``heartbeat_now`` for a KIP-848 member's heartbeat that carries
        only its member id and epoch: the heartbeat interval to answer with."""
        partition = partition_for_group(hb.group_id, self.partitions)
        shard = self._shards.get(partition)
        if shard is None or self._stopped or partition in self._failed:
            return None
        return shard.consumer_heartbeat_now(
            hb.group_id,
            hb.member_id,
            hb.member_epoch,
            hb.client_id,
            client_host,
            self._broker.clock.now_ms(),
        )

    def offset_commit_now(
        self,
        commit: CommitRequest,
        api_version: int,
        client_id: str,
        client_host: str,
        retention_ms: int = -1,
    ) -> Reply | None:
        """``call`` of ``GroupCoordinatorShard.offset_commit`` without its
        coroutine: the reply future, completed once the commit's records are
        durable (as ``call``'s, it may hold TIMED_OUT), or None when the
        commit has to go through ``call`` (the partition is not served here,
        is loading, or its load failed: ``call`` says so)."""
        group_id = commit.group_id
        partition = partition_for_group(group_id, self.partitions)
        shard = self._shards.get(partition)
        if shard is None or self._stopped or partition in self._failed or shard.loading:
            return None
        reach = request_reach(group_id, apis.OFFSET_COMMIT)
        reply = Reply(reach, self._loop or self._running_loop())
        context = CoordinatorContext(api_version, client_id, client_host, reply)
        now = self._broker.clock.now_ms()
        self._submit(partition, shard.offset_commit(commit, context, now, retention_ms), reach)
        return reply

    async def complete_transaction(
        self,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
    ) -> ErrorCode:
        """Write the transaction's marker into the partition, through the
        log's marker path as on any partition (so the transaction ends in
        the partition's producer state and its last stable offset moves on);
        once it is durable, the producer's pending offsets there are
        committed (or dropped, on abort). The marker's error code: NONE once
        stored, else the append's error or the log's refusal of a stale
        marker."""
        if partition in self._failed:
            return ErrorCode.coordinator_not_available
        shard = self._shards.get(partition)
        if shard is None or self._stopped:
            return ErrorCode.not_coordinator
        if partition in self._loading:
            return ErrorCode.coordinator_load_in_progress
        reply = Reply(EVERYTHING, self._running_loop())
        now = self._broker.clock.now_ms()
        result = shard.complete_transaction(
            producer_id, producer_epoch, coordinator_epoch, commit, reply, now
        )
        self._submit(partition, result, EVERYTHING)
        answer = await reply
        if answer is TIMED_OUT:
            return ErrorCode.request_timed_out
        assert isinstance(answer, ErrorCode)
        return answer

    def force_rebalance(self, group_id: str) -> None:
        """The group rebalances now, as when a member's metadata changes."""
        partition = self.partition_for(group_id)
        result = self.shard(partition).force_rebalance(group_id, self._broker.clock.now_ms())
        if result is None:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} has no members")
        self._submit(partition, result)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """The member's session times out now."""
        partition = self.partition_for(group_id)
        now = self._broker.clock.now_ms()
        result = self.shard(partition).expire_member(group_id, member_id, now)
        if result is None:
            raise KafkaError(
                ErrorCode.unknown_member_id, f"No member {member_id} in group {group_id}"
            )
        self._submit(partition, result)

    def move_coordinator(self, group_id: str) -> None:
        """The group's coordinator moves, as on a failover to a broker that
        reads the same log: its partition is dropped (parked requests are told
        NOT_COORDINATOR) and loaded again from `__consumer_offsets`."""
        if not self._gain_all:
            raise KafkaError(ErrorCode.invalid_request, "a cluster moves coordinators itself")
        partition = self.partition_for(group_id)
        epoch = self._epochs.get(partition)
        self.partition_gained(partition, 0 if epoch is None else epoch + 1)
