"""Reading a share partition's records for a ShareFetch: from the next fetch
offset, up to the high watermark (or the last stable offset when the group's
``share.isolation.level`` is read_committed), the batches whose records the
member acquired. Transaction markers are archived as they are read, and so,
under read_committed, are the records of aborted transactions: no member
gets them.

A share partition is made at the first fetch of its group, its start offset
where the group's ``share.auto.offset.reset`` says: the end of the log
(latest, Kafka's default) or its start (earliest).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgroups.config.group_config import (
    BY_DURATION,
    SHARE_AUTO_OFFSET_RESET,
    SHARE_ISOLATION_LEVEL,
)
from kgroups.config.iso_durations import parse_duration_ms
from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions.log import NotInMemory, PartitionLog
from kgroups.records.batch import BatchHeader, iter_batches
from kgroups.share_partitions import AcquiredRange, SharePartition

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi


@dataclass(slots=True)
class PartitionRead:
    error: ErrorCode = ErrorCode.none
    records: bytes = b""
    acquired: tuple[AcquiredRange, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupSettings:
    read_committed: bool
    earliest: bool
    record_lock_duration_ms: int | None
    by_duration_ms: int | None = None
    """share.auto.offset.reset=by_duration: how far back a share partition starts."""


def group_settings(broker: BrokerApi, group_id: str) -> GroupSettings:
    own: Mapping[str, str] = broker.dynamic_configs.group_configs(group_id)
    lock = own.get("share.record.lock.duration.ms")
    reset = own.get(SHARE_AUTO_OFFSET_RESET, "").strip().lower()
    return GroupSettings(
        read_committed=own.get(SHARE_ISOLATION_LEVEL, "").lower() == "read_committed",
        earliest=reset == "earliest",
        record_lock_duration_ms=None if lock is None else int(lock),
        by_duration_ms=parse_duration_ms(reset[len(BY_DURATION) :])
        if reset.startswith(BY_DURATION)
        else None,
    )


def share_partition(
    broker: BrokerApi,
    group_id: str,
    topic_id: uuid.UUID,
    partition: int,
    log: PartitionLog,
    settings: GroupSettings,
) -> SharePartition:
    manager = broker.share_partitions
    config = manager.config
    if settings.record_lock_duration_ms is not None:
        config = dataclasses.replace(
            config, record_lock_duration_ms=settings.record_lock_duration_ms
        )

    def start() -> int:
        latest = log.last_stable_offset if settings.read_committed else log.high_watermark
        if settings.earliest:
            return log.log_start_offset
        if settings.by_duration_ms is not None:
            # The first record written since then; none: the end, as Kafka.
            since = broker.clock.now_ms() - settings.by_duration_ms
            found = log.offset_for_timestamp(since)
            return latest if found is None else min(found.offset, latest)
        return latest

    sp = manager.get_or_create((group_id, topic_id, partition), start, config)
    sp.move_start(log.log_start_offset)
    return sp


def passed_over_batches(headers: list[BatchHeader], aborted: list[tuple[int, int]]) -> set[int]:
    """Base offsets of the batches no member gets: transaction markers, and
    under read_committed the records of aborted transactions (a producer's
    batches from its aborted transaction's first offset to its marker, as a
    read_committed consumer drops them)."""
    starts: dict[int, list[int]] = {}
    for pid, first in aborted:
        starts.setdefault(pid, []).append(first)
    aborting: set[int] = set()
    out: set[int] = set()
    for h in headers:
        pid = h.producer_id
        if pid in starts and any(first <= h.base_offset for first in starts[pid]):
            starts[pid] = [first for first in starts[pid] if first > h.base_offset]
            aborting.add(pid)
        if h.is_control:
            out.add(h.base_offset)
            aborting.discard(pid)
        elif h.is_transactional and pid in aborting:
            out.add(h.base_offset)
    return out


def read_and_acquire(
    broker: BrokerApi,
    group_id: str,
    member_id: str,
    topic_id: uuid.UUID,
    partition: int,
    settings: GroupSettings,
    max_bytes: int,
    max_records: int,
    record_limit: bool,
    now_ms: int,
) -> PartitionRead:
    topic = broker.topics.by_id(topic_id)
    if topic is None:
        return PartitionRead(ErrorCode.unknown_topic_id)
    try:
        log = broker.partitions.log(topic.name, partition)
        sp = share_partition(broker, group_id, topic_id, partition, log, settings)
        sp.expire(now_ms)
        if max_records <= 0 or not sp.can_acquire():
            return PartitionRead()
        offset = sp.next_fetch_offset()
        end = log.last_stable_offset if settings.read_committed else log.high_watermark
        if offset >= end:
            return PartitionRead()
        data = bytes(log.read(offset, max(max_bytes, 0), max_offset=end, min_one=True))
    except NotInMemory:
        return PartitionRead()  # older batches a cluster's store holds: not read here yet
    except KafkaError as e:
        return PartitionRead(e.error_code)
    headers = list(iter_batches(data))
    batches = [(h.base_offset, h.last_offset, pos, h.size) for pos, h in headers]
    aborted = log.aborted_transactions(offset, end) if settings.read_committed else []
    acquired = sp.acquire(
        member_id,
        [(b, last) for b, last, _, _ in batches],
        now_ms,
        max_records,
        record_limit,
        passed_over=passed_over_batches([h for _, h in headers], aborted),
    )
    if not acquired:
        return PartitionRead()
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    kept = [
        (pos, size) for b, end_offset, pos, size in batches if end_offset >= first and b <= last
    ]
    start_pos = kept[0][0]
    end_pos = kept[-1][0] + kept[-1][1]
    return PartitionRead(records=data[start_pos:end_pos], acquired=tuple(acquired))
