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
import itertools
import uuid
from collections.abc import Iterator, Mapping
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
from kgroups.partitions.log import PartitionRead as LogRead
from kgroups.records.batch import BatchHeader, iter_batches
from kgroups.share_partitions import AcquiredRange, SharePartition

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi


@dataclass(slots=True)
class PartitionRead:
    error: ErrorCode = ErrorCode.none
    records: bytes = b""
    acquired: tuple[AcquiredRange, ...] = ()
    message: str | None = None


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


# A fetch reads the log a piece at a time, each twice the size of the last, as
# far as acquisition goes: a member taking a few records need not read (and
# walk the batch headers of) max_bytes of log each time.
FIRST_READ_BYTES = 256 * 1024


class _LogPieces:
    """The batches of a partition from ``offset`` on, read as they are asked
    for: at most ``max_bytes`` in all (with ``min_one``, the first batch
    whole, however large)."""

    def __init__(
        self,
        log: PartitionLog | _StoreBacked,
        offset: int,
        end: int,
        max_bytes: int,
        aborted: list[tuple[int, int]],
        min_one: bool = True,
    ) -> None:
        self._log = log
        self._min_one = min_one
        self._position = offset
        self._end = end
        self._budget = max(max_bytes, 0)
        self._chunk = min(self._budget, FIRST_READ_BYTES)
        self._aborted = aborted
        self._headers: list[BatchHeader] = []
        self._size = 0
        self.pieces: list[bytes] = []
        self.batches: list[tuple[int, int, int, int]] = []
        """(base offset, last offset, position, size) of every batch read."""
        self.passed_over: set[int] = set()

    def read(self) -> list[tuple[int, int]]:
        """The next piece's batches, (base, last offset) each; [] at the end.
        The first read's errors are the fetch's; a later one ends the read."""
        first = not self.pieces
        if self._position >= self._end or (self._budget <= 0 and not (first and self._min_one)):
            return []
        try:
            # A batch larger than the piece comes whole (KIP-74), within max_bytes
            # unless it is the first and min_one.
            data = bytes(
                self._log.read(
                    self._position,
                    self._chunk,
                    max_offset=self._end,
                    min_one=self._min_one or not first,
                )
            )
        except (NotInMemory, KafkaError):
            if first:
                raise
            return []
        headers = list(iter_batches(data))
        if not headers or (not first and len(data) > self._budget):
            return []
        self.pieces.append(data)
        new = [(h.base_offset, h.last_offset, self._size + pos, h.size) for pos, h in headers]
        self.batches += new
        self._headers += [h for _, h in headers]
        # Whether a batch is an aborted transaction's depends on the batches before it.
        self.passed_over.update(passed_over_batches(self._headers, self._aborted))
        self._size += len(data)
        self._budget -= len(data)
        self._position = headers[-1][1].next_offset
        self._chunk = min(self._budget, 2 * self._chunk)
        return [(b, last) for b, last, _, _ in new]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        while batches := self.read():
            yield from batches


class _StoreBacked:
    """A log whose batches not in memory (a cluster's older batches, which
    the store holds) come from a read of the store made before: ``data``,
    the batches from the one holding ``offset`` on."""

    def __init__(self, log: PartitionLog, data: bytes) -> None:
        self._log = log
        self._batches = [
            (h.base_offset, h.last_offset, pos, h.size) for pos, h in iter_batches(data)
        ]
        self._data = data

    def read(self, position: int, max_bytes: int, max_offset: int, min_one: bool) -> bytes:
        try:
            return bytes(
                self._log.read(position, max_bytes, max_offset=max_offset, min_one=min_one)
            )
        except NotInMemory:
            pass
        start = end = None
        for base, last, pos, size in self._batches:
            if last < position:
                continue
            if base >= max_offset:
                break
            if start is None:
                if size > max_bytes and not min_one:
                    break
                start, end = pos, pos + size
            elif pos + size - start <= max_bytes:
                end = pos + size
            else:
                break
        if start is None or end is None:
            raise NotInMemory
        return self._data[start:end]


async def store_reads(
    broker: BrokerApi,
    group_id: str,
    keys: list[tuple[uuid.UUID, int]],
    settings: GroupSettings,
    max_bytes: int,
) -> dict[tuple[uuid.UUID, int], bytes]:
    """For the partitions whose next records only the store holds (a
    cluster's leader that took the partition over), those records, read
    from the store before the fetch acquires them."""
    reads: list[tuple[tuple[uuid.UUID, int], LogRead]] = []
    for topic_id, partition in keys:
        topic = broker.topics.by_id(topic_id)
        if topic is None:
            continue
        try:
            log = broker.partitions.log(topic.name, partition)
            sp = share_partition(broker, group_id, topic_id, partition, log, settings)
            offset = sp.next_fetch_offset()
            end = log.last_stable_offset if settings.read_committed else log.high_watermark
            if offset >= end:
                continue
            log.read(offset, 1, max_offset=end, min_one=True)
        except NotInMemory:
            reads.append(
                ((topic_id, partition), LogRead(topic.name, partition, offset, max_bytes, end))
            )
        except KafkaError:
            continue
    if not reads:
        return {}
    results = await broker.partitions.read_many([r for _k, r in reads])
    return {
        key: got for (key, _r), got in zip(reads, results, strict=True) if isinstance(got, bytes)
    }


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
    min_one: bool = True,
    batch_size: int | None = None,
    from_store: bytes | None = None,
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
        aborted = log.aborted_transactions(offset, end) if settings.read_committed else []
        source: PartitionLog | _StoreBacked = (
            log if from_store is None else _StoreBacked(log, from_store)
        )
        pieces = _LogPieces(source, offset, end, max_bytes, aborted, min_one)
        first_piece = pieces.read()
    except NotInMemory:
        return PartitionRead()  # older batches a cluster's store holds: not read here yet
    except KafkaError as e:
        return PartitionRead(e.error_code)
    acquired = sp.acquire(
        member_id,
        itertools.chain(first_piece, pieces),
        now_ms,
        max_records,
        record_limit,
        passed_over=pieces.passed_over,
    )
    if not acquired:
        return PartitionRead()
    if batch_size is not None and not record_limit:
        acquired = split_by_batch_size(acquired, [b for b, *_ in pieces.batches], batch_size)
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    kept = [
        (pos, size)
        for b, end_offset, pos, size in pieces.batches
        if end_offset >= first and b <= last
    ]
    start_pos = kept[0][0]
    end_pos = kept[-1][0] + kept[-1][1]
    data = pieces.pieces[0] if len(pieces.pieces) == 1 else b"".join(pieces.pieces)
    return PartitionRead(records=data[start_pos:end_pos], acquired=tuple(acquired))


def fetchable(
    broker: BrokerApi,
    group_id: str,
    topic_id: uuid.UUID,
    partition: int,
    settings: GroupSettings,
    now_ms: int,
) -> bool:
    """Whether a fetch reads the partition now: its share partition may
    acquire more. Kafka shares a fetch's MaxBytes among these."""
    topic = broker.topics.by_id(topic_id)
    if topic is None:
        return False
    try:
        log = broker.partitions.log(topic.name, partition)
        sp = share_partition(broker, group_id, topic_id, partition, log, settings)
    except (NotInMemory, KafkaError):
        return True  # the read answers its error
    sp.expire(now_ms)
    return sp.can_acquire()


def pending_bytes(
    broker: BrokerApi,
    group_id: str,
    topic_id: uuid.UUID,
    partition: int,
    settings: GroupSettings,
    cap: int,
) -> int:
    """The bytes of log from the share partition's next fetch offset to the
    end (high watermark, or last stable offset), at most ``cap``: what
    Kafka weighs against a fetch's MinBytes. A partition whose read would
    fail, or whose batches only the store holds, counts in full."""
    topic = broker.topics.by_id(topic_id)
    if topic is None:
        return cap
    try:
        log = broker.partitions.log(topic.name, partition)
        sp = share_partition(broker, group_id, topic_id, partition, log, settings)
        offset = sp.next_fetch_offset()
        end = log.last_stable_offset if settings.read_committed else log.high_watermark
        if offset >= end:
            return 0
        return min(cap, len(log.read(offset, cap, max_offset=end, min_one=True)))
    except (NotInMemory, KafkaError):
        return cap


def split_by_batch_size(
    acquired: list[AcquiredRange], batch_bases: list[int], batch_size: int
) -> list[AcquiredRange]:
    """A ShareFetch's BatchSize, as Kafka 4.2 uses it out of record-limit
    mode: records delivered the first time go out in ranges of about
    ``batch_size`` records, a range ending where a log batch starts once it
    has that many (``batch_bases``: the base offsets of the batches read, in
    order). A ``batch_size`` of 0 or less ends one at every log batch.
    Redelivered ranges are kept whole."""
    out: list[AcquiredRange] = []
    for r in acquired:
        if r.delivery_count != 1 or r.last_offset - r.first_offset + 1 <= batch_size:
            out.append(r)
            continue
        first = r.first_offset
        for base in batch_bases:
            if base > r.last_offset:
                break
            if base > first and base - first >= batch_size:
                out.append(AcquiredRange(first, base - 1, r.delivery_count))
                first = base
        out.append(AcquiredRange(first, r.last_offset, r.delivery_count))
    return out
