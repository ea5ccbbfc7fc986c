"""Log compaction: keep only the newest record of each key in compacted topics.

Theory of operation
-------------------
Only closed segments are cleaned; the active segment keeps taking appends. A
round (Kafka's LogCleaner, one partition at a time) has three parts:

1. **Plan** (event loop, cheap): ``plan_cleaning`` / ``LogManager.cleanable_logs``
   decide which logs are dirty enough and snapshot what the worker needs.
2. **Clean** (worker thread, expensive): ``LogCleaner.clean(plan)`` reads the
   segment files through its own descriptors, never the log's objects.
   Pass 1 maps key -> latest offset over the dirty part (cleaner checkpoint up
   to the first uncleanable offset), stopping early if the map is full. Pass 2
   rewrites every segment below the mapped end, in groups whose sizes add up to
   at most ``segment.bytes``, each group into one ``<base>.log.cleaned`` (plus
   indexes) that is fsynced before it is offered. A record survives if it is the
   newest of its key (or beyond what was mapped); keyless records go (a
   compacted topic refuses them at produce time); a tombstone goes once it sits
   in a segment cleaned before whose file was last modified more than
   ``delete.retention.ms`` ago (a cleaned segment keeps the modification time of
   the newest segment it replaced, as in Kafka). Offsets never change, so a
   cleaned log has gaps.
3. **Commit** (event loop, renames only): ``CleanResult.commit()`` checks the log
   has not been truncated, had segments deleted or been closed meanwhile (else
   it discards the work and returns False), then swaps each group in with
   ``SegmentLog.replace_segments`` and writes the cleaner checkpoint. The
   replaced files, renamed ``.deleted``, are unlinked afterwards off the loop
   (unlinking a large file takes milliseconds).

Records of aborted transactions go (``.txnindex`` says which); a transaction
still open stops cleaning at its segment (the last stable offset bounds the
cleanable part); markers are kept. Batches keep their producer fields. A batch
whose records all go is dropped, unless it is the last batch of an active
idempotent producer (Kafka keeps those so producer state survives a restart) or
the last batch of a group: a swap file must end at its group's last offset for
crash recovery to know which segments it replaces. Those become empty batches.

Running it from the server
--------------------------
One task owns the cleaner and cleans one log at a time (as Kafka's single
default cleaner thread does), every ``log.cleaner.backoff.ms`` (Kafka: 15 s)::

    cleaner = LogCleaner()
    while True:
        for plan in log_manager.cleanable_logs(clock.now_ms()):
            result = await loop.run_in_executor(executor, cleaner.clean, plan)
            if result.commit():        # on the loop; False if the log changed
                await loop.run_in_executor(executor, result.remove_replaced_files)
        await asyncio.sleep(backoff_s)

``clean`` raises ``OSError`` or ``KafkaError`` if a file vanished (the partition
was deleted) or is corrupt, and ``RuntimeError`` if the same log is already being
cleaned; it leaves nothing behind but ``.cleaned`` files it could not remove,
which the next open discards. ``commit`` raising ``OSError`` (a failed rename)
leaves a swap half done on disk: reopening the log completes or undoes it. On
shutdown, cancel the task and wait for a ``clean`` in flight; its result's
``commit`` then returns False once the log is closed (or call ``discard()``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kgroups.partitions.config import DEFAULT_MAP_ENTRIES
from kgroups.records.batch import (
    HEADER_SIZE,
    BatchHeader,
    BatchMeta,
    iter_batches,
    read_header,
    records_section,
)
from kgroups.records.filter import empty_batch, filtered_batch, parse_records
from kgroups.storage.cleanable import CleanPlan, SegmentInfo
from kgroups.storage.cleaner_checkpoint import write_clean_offset
from kgroups.storage.log_files import CLEANED_SUFFIX
from kgroups.storage.offset_map import OffsetMap
from kgroups.storage.segment import INT32_MAX, Segment

__all__ = ["CleanResult", "CleanStats", "LogCleaner"]

log = logging.getLogger(__name__)

_READ_CHUNK = 1024 * 1024
_WRITE_CHUNK = 1024 * 1024


@dataclass(slots=True)
class CleanStats:
    records_read: int = 0
    records_kept: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    map_entries: int = 0
    groups: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class CleanResult:
    """New segments waiting to be swapped in; commit or discard it on the loop."""

    plan: CleanPlan
    # Each cleaned group: the live segments it replaces and its ``.cleaned`` segment.
    swaps: list[tuple[tuple[Segment, ...], Segment]]
    clean_offset: int  # the checkpoint to write once swapped in
    stats: CleanStats = field(default_factory=CleanStats)
    # Files of the replaced segments, renamed ``.deleted`` by the swap.
    replaced_files: list[Path] = field(default_factory=list)
    _done: bool = False

    def commit(self, *, on_step: Callable[[str], None] | None = None) -> bool:
        """Swap the cleaned segments in; False (and nothing changed) if the log was
        truncated, had segments deleted or was closed since the plan was made."""
        if self._done:
            raise RuntimeError("this clean result was already committed or discarded")
        plog = self.plan.log
        if plog.closed or plog.layout_version != self.plan.layout_version:
            log.info("%s changed while it was being cleaned; discarding", plog.directory.name)
            self.discard()
            return False
        self._done = True
        for i, (old, new) in enumerate(self.swaps):
            try:
                self.replaced_files += plog.replace_segments(old, new, on_step=on_step)
            except BaseException:
                for _old, pending in self.swaps[i + 1 :]:
                    pending.delete()
                raise
        write_clean_offset(self.plan.directory, self.clean_offset)
        if on_step is not None:
            on_step("checkpoint")
        stats = self.stats
        log.info(
            "%s: cleaned %d records into %d (%d -> %d bytes, %d group(s)) in %.3f s",
            plog.directory.name,
            stats.records_read,
            stats.records_kept,
            stats.bytes_read,
            stats.bytes_written,
            stats.groups,
            stats.seconds,
        )
        return True

    def remove_replaced_files(self) -> None:
        """Unlink the replaced segments' files after ``commit`` (slow for big files:
        run it off the loop). Any left behind are removed when the log is opened."""
        for path in self.replaced_files:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.replaced_files = []

    def discard(self) -> None:
        """Remove the ``.cleaned`` files (the log is left as it was)."""
        self._done = True
        for _old, new in self.swaps:
            new.delete()
        self.swaps = []


def _batches(fd: int, size: int) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Whole batches of a segment file, read in chunks through ``fd``."""
    pos = 0
    while pos + HEADER_SIZE <= size:
        chunk = os.pread(fd, min(_READ_CHUNK, size - pos), pos)
        if len(chunk) >= HEADER_SIZE:
            first = read_header(chunk)
            if first.size > len(chunk):  # one batch larger than a chunk
                chunk = os.pread(fd, first.size, pos)
        used = 0
        view = memoryview(chunk)
        for at, header in iter_batches(chunk):
            yield header, view[at : at + header.size]
            used = at + header.size
        if used == 0:
            raise OSError(f"segment file ends inside a batch at position {pos}")
        pos += used


class _Group:
    """One cleaned segment in the making, and the live segments it will replace."""

    def __init__(self, plan: CleanPlan, base_offset: int) -> None:
        config = plan.config
        self.segment = Segment.create(
            plan.directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_bytes=config.segment_index_bytes,
            now_ms=plan.now_ms,
            suffix=CLEANED_SUFFIX,
        )
        self.old: list[SegmentInfo] = []
        self.written = 0
        self.changed = False
        # The group's last batch if it was dropped: it returns as an empty batch.
        self.last_dropped: BatchHeader | None = None
        self.mtime_ns = 0
        self._max_bytes = config.segment_bytes
        self._max_entries = max(1, config.segment_index_bytes // 8)
        self._buf = bytearray()
        self._metas: list[BatchMeta] = []

    def fits(self, info: SegmentInfo) -> bool:
        """Whether ``info`` can join even if it all survives: the output stays within
        ``segment.bytes``, its index within bounds, its offsets within 32 bits of the
        base. Decided on what earlier segments actually kept, so small cleaned
        segments merge in one round."""
        self.flush()
        return (
            self.written + info.size <= self._max_bytes
            and len(self.segment.index) + info.index_entries + 1 <= self._max_entries
            and info.next_offset - 1 - self.segment.base_offset <= INT32_MAX
        )

    def add(self, batch: bytes | memoryview, header: BatchHeader) -> None:
        self._metas.append((len(self._buf), header.size, header.last_offset, header.max_timestamp))
        self._buf += batch
        self.written += header.size
        self.last_dropped = None
        if len(self._buf) >= _WRITE_CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._metas:
            self.segment.append(self._buf, self._metas)
            self._buf = bytearray()
            self._metas = []

    def finish(self) -> Segment | None:
        """Seal and fsync the cleaned segment; None (and it is removed) if it would
        change nothing."""
        if self.last_dropped is not None:
            # The swap must reach the group's last offset (see the module doc).
            marker = empty_batch(self.last_dropped)
            self.add(marker, read_header(marker))
        if not (self.changed or len(self.old) > 1) or self.written == 0:
            self.segment.delete()
            return None
        self.flush()
        segment = self.segment
        segment.seal()
        # Keep the replaced files' age: tombstone expiry and time retention read it.
        os.utime(segment.log.path, ns=(self.mtime_ns, self.mtime_ns))
        for f in segment.files():
            f.sync()
        return segment


class LogCleaner:
    """Cleans one log at a time; ``clean`` is safe to run off the event loop."""

    def __init__(self, *, max_map_entries: int = DEFAULT_MAP_ENTRIES) -> None:
        self.max_map_entries = max_map_entries
        # Directories being cleaned: two rounds on one log would write the same
        # ``.cleaned`` files. Workers may be threads, hence the lock.
        self._busy: set[Path] = set()
        self._lock = threading.Lock()

    def clean(self, plan: CleanPlan) -> CleanResult:
        """Both passes, from the plan's snapshot; the log itself is not touched."""
        with self._lock:
            if plan.directory in self._busy:
                raise RuntimeError(f"{plan.directory.name} is already being cleaned")
            self._busy.add(plan.directory)
        try:
            return self._clean(plan)
        finally:
            with self._lock:
                self._busy.discard(plan.directory)

    def _clean(self, plan: CleanPlan) -> CleanResult:
        started = time.perf_counter()
        stats = CleanStats()
        offset_map = OffsetMap(self.max_map_entries)
        self._build_map(plan, offset_map)
        stats.map_entries = len(offset_map)
        end = offset_map.latest_offset + 1
        result = CleanResult(plan, [], end, stats)
        infos = [info for info in plan.segments if info.base_offset < end]
        group: _Group | None = None
        try:
            for info in infos:
                if group is not None and not group.fits(info):
                    self._finish(group, result)
                    group = None
                if group is None:
                    group = _Group(plan, info.base_offset)
                self._clean_segment(plan, group, info, offset_map, stats)
            if group is not None:
                self._finish(group, result)
                group = None
        except BaseException:
            if group is not None:
                group.segment.delete()
            result.discard()
            raise
        stats.seconds = time.perf_counter() - started
        return result

    @staticmethod
    def _finish(group: _Group, result: CleanResult) -> None:
        new = group.finish()
        if new is not None:
            result.swaps.append((tuple(info.segment for info in group.old), new))
            result.stats.groups += 1
            result.stats.bytes_written += group.written

    # -- pass 1 ------------------------------------------------------------------

    def _build_map(self, plan: CleanPlan, offset_map: OffsetMap) -> None:
        first_dirty = plan.first_dirty
        offsets = offset_map.offsets
        for info in plan.segments:
            if info.next_offset <= first_dirty:
                continue
            fd = os.open(info.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                for header, batch in _batches(fd, info.size):
                    if header.last_offset < first_dirty or header.is_control:
                        continue
                    if plan.aborted and plan.is_aborted(header):
                        continue  # an aborted record is no key's latest value
                    if not offset_map.has_room_for(header.records_count):
                        log.info(
                            "%s: offset map full at offset %d; cleaning up to there",
                            plan.directory.name,
                            header.base_offset,
                        )
                        return
                    base = header.base_offset
                    data = records_section(batch, header)
                    for span in parse_records(data, header.records_count):
                        key = span[4]
                        if key is not None:
                            offsets[key] = base + span[2]
                    offset_map.latest_offset = header.last_offset
            finally:
                os.close(fd)
        offset_map.latest_offset = plan.first_uncleanable - 1

    # -- pass 2 ------------------------------------------------------------------

    def _clean_segment(
        self,
        plan: CleanPlan,
        group: _Group,
        info: SegmentInfo,
        offset_map: OffsetMap,
        stats: CleanStats,
    ) -> None:
        """Copy what ``info``'s segment keeps into ``group``."""
        group.old.append(info)
        fd = os.open(info.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            mtime_ns = os.fstat(fd).st_mtime_ns
            group.mtime_ns = max(group.mtime_ns, mtime_ns)
            # Tombstones go only from segments cleaned before (consumers of the dirty
            # part get to see them), once delete.retention.ms has passed.
            drop_tombstones = (
                info.next_offset <= plan.first_dirty
                and plan.now_ms - mtime_ns // 1_000_000 > plan.config.delete_retention_ms
            )
            for header, batch in _batches(fd, info.size):
                stats.records_read += header.records_count
                stats.bytes_read += header.size
                kept = self._filter(plan, offset_map, header, batch, drop_tombstones)
                if kept is batch:
                    stats.records_kept += header.records_count
                    group.add(batch, header)
                    continue
                group.changed = True
                if kept is None:
                    group.last_dropped = header
                else:
                    new_header = read_header(kept)
                    stats.records_kept += new_header.records_count
                    group.add(kept, new_header)
        finally:
            os.close(fd)

    @staticmethod
    def _filter(
        plan: CleanPlan,
        offset_map: OffsetMap,
        header: BatchHeader,
        batch: memoryview,
        drop_tombstones: bool,
    ) -> bytes | memoryview | None:
        """The batch to write in place of ``batch``: itself, a filtered copy, or None."""
        if header.is_control:
            return batch
        latest = offset_map.latest_offset
        base = header.base_offset
        if base > latest:
            return batch  # beyond what pass 1 mapped: next round's work
        retain_header = (
            header.producer_id >= 0
            and plan.producer_last_offsets.get(header.producer_id) == header.last_offset
        )
        count = header.records_count
        if count == 0:
            return batch if retain_header else None
        if plan.aborted and plan.is_aborted(header):
            return empty_batch(header) if retain_header else None
        data = records_section(batch, header)
        spans = parse_records(data, count)
        offsets = offset_map.offsets
        kept = []
        for span in spans:
            offset = base + span[2]
            if offset <= latest:
                key = span[4]
                if key is None or offset < offsets.get(key, -1):
                    continue
                if span[5] and drop_tombstones:
                    continue
            kept.append(span)
        if len(kept) == count:
            return batch
        if not kept:
            return empty_batch(header) if retain_header else None
        return filtered_batch(header, data, kept)
