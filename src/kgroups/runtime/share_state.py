"""Share partitions' state in ``__share_group_state``: written as a request
changes it, read back when the broker starts.

Each change of a share partition worth keeping (an acknowledgement, a
delivery ended, the start moved) is written as a ShareSnapshot record of its
whole state, keyed by (group, topic id, partition), in the partition of
``__share_group_state`` Kafka places that key in; the request is answered
once the write is durable (an acknowledgement is not answered before it
would survive a restart). A deleted group's keys get tombstones. The topic
is compacted: the newest snapshot of each key is all that loading needs.

Loading, at start, scans each partition (runtime/partition_scan.py, as the
coordinators load theirs) and keeps the newest value of each key; each
share partition takes its stored state up at its first use, through the
same restore (share_partitions/persisted.py) whatever wrote it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kgroups.errors import ErrorCode, KafkaError
from kgroups.records.batch import encode_batch
from kgroups.runtime.partition_scan import scan_partition
from kgroups.share_partitions.manager import PartitionKey
from kgroups.topics.placement import SHARE_GROUP_STATE_TOPIC, partition_for_share_key

# The records' codec is imported with the first state written or read back.
if TYPE_CHECKING:
    from kgroups.runtime.broker_core import BrokerCore
    from kgroups.share_partitions.partition import SharePartition
    from kgroups.share_partitions.state_records import StateBatch

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]


class ShareStateLog:
    def __init__(self, broker: BrokerCore) -> None:
        self._broker = broker
        cfg = broker.config
        self.partitions = cfg.get_int("share.coordinator.state.topic.num.partitions")
        self._segment_bytes = cfg.get_int("share.coordinator.state.topic.segment.bytes")
        # Per key: the snapshot epoch of its last snapshot, and when it was first written.
        self._epochs: dict[PartitionKey, tuple[int, int]] = {}

    def _partition_of(self, key: PartitionKey) -> int:
        return partition_for_share_key(key[0], key[1], key[2], self.partitions)

    async def persist_changes(self, keys: Iterable[PartitionKey] | None = None) -> ErrorCode:
        """Write what changed in the broker's share partitions (those of
        ``keys``; None: all), and the tombstones of deleted groups' keys;
        NONE once durable."""
        from kgroups.share_partitions.state_records import SHARE_SNAPSHOT, ShareStateKey, encode_key

        manager = self._broker.share_partitions
        records: dict[int, list[Record]] = {}
        now = self._broker.clock.now_ms()
        for key, sp in manager.take_changed(keys):
            records.setdefault(self._partition_of(key), []).append(self._snapshot(key, sp, now))
        forgotten, manager.forgotten = manager.forgotten, []
        for key in forgotten:
            self._epochs.pop(key, None)
            state_key = ShareStateKey(SHARE_SNAPSHOT, *key)
            records.setdefault(self._partition_of(key), []).append((encode_key(state_key), None))
        if not records:
            return ErrorCode.none
        return await self._append(records, now)

    def _snapshot(self, key: PartitionKey, sp: SharePartition, now: int) -> Record:
        from kgroups.share_partitions.persisted import state_batches
        from kgroups.share_partitions.state_records import (
            SHARE_SNAPSHOT,
            ShareSnapshotValue,
            ShareStateKey,
            encode_key,
            encode_snapshot,
        )

        epoch, created = self._epochs.get(key, (-1, now))
        self._epochs[key] = (epoch + 1, created)
        value = ShareSnapshotValue(
            snapshot_epoch=epoch + 1,
            state_epoch=0,
            leader_epoch=0,
            start_offset=sp.start_offset,
            create_timestamp=created,
            write_timestamp=now,
            state_batches=state_batches(sp),
        )
        return encode_key(ShareStateKey(SHARE_SNAPSHOT, *key)), encode_snapshot(value)

    async def _append(self, records: dict[int, list[Record]], now: int) -> ErrorCode:
        broker = self._broker
        self._ensure_topic()
        pending = []
        try:
            for partition, batch_records in records.items():
                plog = broker.partitions.log(SHARE_GROUP_STATE_TOPIC, partition)
                plog.append_batch(encode_batch([(k, v, (), now) for k, v in batch_records]), now)
                fsynced = broker.partitions.appended(SHARE_GROUP_STATE_TOPIC, partition, plog)
                if fsynced is not None:
                    pending.append(fsynced)
            for fsynced in pending:
                await fsynced
        except KafkaError as e:
            log.error("writing share state failed: %s", e)
            return e.error_code
        except OSError as e:
            log.error("writing share state failed: %s", e)
            return ErrorCode.kafka_storage_error
        return ErrorCode.none

    def _ensure_topic(self) -> None:
        broker = self._broker
        if broker.topics.get(SHARE_GROUP_STATE_TOPIC) is None:
            configs = {"cleanup.policy": "compact", "segment.bytes": str(self._segment_bytes)}
            broker.create_topic(SHARE_GROUP_STATE_TOPIC, self.partitions, configs)

    async def load(self) -> int:
        """Read every stored share partition state back; how many."""
        broker = self._broker
        topic = broker.topics.get(SHARE_GROUP_STATE_TOPIC)
        if topic is None:
            return 0
        self.partitions = topic.partitions
        stored = broker.share_partitions.stored
        for partition in range(topic.partitions):
            latest, _scanned, _open = await scan_partition(
                broker.partitions, SHARE_GROUP_STATE_TOPIC, partition
            )
            for raw_key, raw_value in latest.items():
                _load_one(raw_key, raw_value, stored, self._epochs)
        log.info("loaded the state of %d share partition(s)", len(stored))
        return len(stored)


def _load_one(
    raw_key: bytes,
    raw_value: bytes | None,
    stored: dict[PartitionKey, tuple[int, tuple[StateBatch, ...]]],
    epochs: dict[PartitionKey, tuple[int, int]],
) -> None:
    from kgroups.share_partitions.state_records import SHARE_SNAPSHOT, decode_key, decode_snapshot

    key = decode_key(raw_key)
    if key.record_type != SHARE_SNAPSHOT:
        return  # ShareUpdate: Kafka's deltas; kgroups writes snapshots only
    partition_key = (key.group_id, key.topic_id, key.partition)
    if raw_value is None:
        stored.pop(partition_key, None)
        return
    value = decode_snapshot(raw_value)
    stored[partition_key] = (value.start_offset, value.state_batches)
    epochs[partition_key] = (value.snapshot_epoch, value.create_timestamp)
