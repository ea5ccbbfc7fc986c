"""What DescribeLogDirs reports of a home: each log directory, the bytes of
the partitions it holds, and the room left on its file system.

A broker alone has one directory (the first of ``log.dirs``); a broker in a
cluster has one too, the store, holding the partitions the broker leads.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from kgroups.errors import ErrorCode

__all__ = ["UNKNOWN_BYTES", "LogDir", "volume_bytes", "wanted"]

TopicPartition = tuple[str, int]

# Kafka's answer for a volume size it cannot tell.
UNKNOWN_BYTES = -1


@dataclass(frozen=True, slots=True)
class LogDir:
    path: str
    error: ErrorCode = ErrorCode.none
    sizes: dict[TopicPartition, int] = field(default_factory=dict)
    """Bytes of each partition's log held here, by (topic, partition)."""
    total_bytes: int = UNKNOWN_BYTES
    usable_bytes: int = UNKNOWN_BYTES


def wanted(
    held: Iterable[TopicPartition], partitions: Collection[TopicPartition] | None
) -> list[TopicPartition]:
    """The partitions held here that were asked for (None asks for all)."""
    if partitions is None:
        return sorted(held)
    return sorted(tp for tp in held if tp in partitions)


def volume_bytes(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``path``, as Java's
    FileStore answers them: usable is what an unprivileged writer may take."""
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
