"""The leader epochs of a local log, read back from its segments.

A local log keeps no file of its epochs (Kafka's ``leader-epoch-checkpoint``):
they are learnt from the batch headers the first time they are asked for, and
kept until the log is truncated. A broker alone writes every batch at its own
epoch, so a segment's epochs are nearly always one: a segment whose first and
last batches carry the same epoch is taken to hold only that one (epochs never
go down along a log Kafka or kgroups wrote), which costs two header reads; only
a segment where the epoch changes is read header by header. Opening a log reads
nothing more than it did.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgroups.partitions.leader_epochs import LeaderEpochs
from kgroups.records.batch import HEADER_SIZE, read_header
from kgroups.storage.segment import Segment

__all__ = ["epochs_of"]


def epochs_of(segments: Sequence[Segment], leader_epoch: int, log_end: int) -> LeaderEpochs:
    """The epochs the batches of ``segments`` carry, then the log's own
    ``leader_epoch``, from ``log_end`` when it was not written yet."""
    known = LeaderEpochs()
    for segment in segments:
        if segment.size < HEADER_SIZE:
            continue
        first = read_header(segment.log.pread(HEADER_SIZE, 0))
        last = segment.find(segment.last_offset)
        if last is None or last[1].partition_leader_epoch == first.partition_leader_epoch:
            known.observe(first.partition_leader_epoch, first.base_offset)
            continue
        for _pos, header in segment.scan():
            known.observe(header.partition_leader_epoch, header.base_offset)
    # The epoch a leader starts at begins at its log end, as Kafka's new leader assigns it.
    known.assign(leader_epoch, log_end)
    return known
