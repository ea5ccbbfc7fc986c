"""The local home of partitions: segment files in a log directory, with their
indexes, recovery after a crash, retention, compaction and fsyncs."""

from kgroups.storage.log import SegmentLog
from kgroups.storage.log_manager import LogManager

__all__ = ["LogManager", "SegmentLog"]
