"""One partition's log, as everything above the seam sees it.

Two classes answer to it: ``kgroups.storage.log.SegmentLog`` (segment files in
a local directory) and ``kgroups.postgres_store.store_log.StoreLog`` (a
partition this broker leads, kept in the PostgreSQL store). Offsets are
assigned by the log on append, in memory and on the loop; what makes them
durable (an fsync, a commit to the store) is the home's business
(``PartitionHome.appended``). A read the log cannot answer from memory raises
``NotInMemory``, and the home reads it off the loop (``PartitionHome.read_many``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

from kgroups.partitions.config import LogConfig
from kgroups.partitions.leader_epochs import NO_EPOCH, EpochEndOffset
from kgroups.partitions.producer_state import ProducerStateManager
from kgroups.partitions.stamping import AppendResult
from kgroups.records.file_region import FileRegion

__all__ = ["NotInMemory", "PartitionLog", "PartitionRead", "TimestampOffset"]


class TimestampOffset(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int = NO_EPOCH
    """Of the batch holding the record (ListOffsets answers it)."""


class NotInMemory(Exception):
    """The offsets asked for are not in memory: ask the home (``read_many``)."""


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """A fetch a log could not answer from memory."""

    topic: str
    partition: int
    offset: int
    max_bytes: int
    max_offset: int | None = None
    """Only batches below it (the last stable offset of a read_committed fetch)."""
    min_one: bool = True
    """At least one whole batch, beyond ``max_bytes`` if need be (KIP-74: the
    first partition of a fetch only)."""


class PartitionLog(Protocol):
    config: LogConfig
    producers: ProducerStateManager
    """The idempotent and transactional producers' state of this partition."""
    leader_epoch: int
    """Stamped into every appended batch (0 on a single broker); the epoch a
    request's current leader epoch is checked against."""

    # -- offsets and watermarks ----------------------------------------------

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """The next offset a reader may see appear."""
        ...

    @property
    def high_watermark(self) -> int:
        """The end of what is durable: readers see up to here."""
        ...

    @property
    def last_stable_offset(self) -> int:
        """The first offset of an open transaction (else the high watermark)."""
        ...

    @property
    def offline(self) -> bool:
        """The log failed (a disk error): it answers KAFKA_STORAGE_ERROR."""
        ...

    @property
    def size(self) -> int | None:
        """Bytes of the partition's batches, when known here."""
        ...

    # -- appending -------------------------------------------------------------

    def append(
        self, payload: bytes | bytearray | memoryview, now_ms: int, *, from_client: bool = True
    ) -> AppendResult:
        """Validate a producer's batches, assign their offsets and keep them
        (durable once the home says so)."""
        ...

    def append_batch(self, batch: bytes | bytearray | memoryview, now_ms: int) -> AppendResult:
        """Append batches the broker built itself (coordinator records)."""
        ...

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> int:
        """Write a transaction's commit or abort marker; its offset."""
        ...

    # -- reading ---------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``
        (the first one whole when ``min_one``) and below ``max_offset``;
        ``NotInMemory`` when the home must read them."""
        ...

    def read_region(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one: bool = True,
    ) -> FileRegion | bytes:
        """What ``read`` reads; a log kept in files may answer with the region
        of its file that holds the batches, for the connection to send as is."""
        ...

    def aborted_transactions(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions that have
        records in ``[start, end)``, for read_committed fetches."""
        ...

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record at or after ``timestamp`` (``NotInMemory`` if unknown here)."""
        ...

    def max_timestamp_offset(self) -> TimestampOffset | None:
        """The record with the largest timestamp (``NotInMemory`` if unknown here)."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        """The largest epoch up to ``epoch`` the log knows, and where it ends
        (OffsetForLeaderEpoch; see ``leader_epochs``); ``NotInMemory`` if the
        home must read the older batches."""
        ...

    def log_start_epoch(self) -> int:
        """The leader epoch at the log start, -1 if unknown (ListOffsets
        earliest); ``NotInMemory`` if the home must read it."""
        ...

    def record_timestamp(self, offset: int) -> int | None:
        """The estimated timestamp of the record at ``offset`` (lag in seconds);
        None when not known here."""
        ...
