"""Partition logs: record batches, segments, indexes, recovery and retention."""

from kgroups.storage.config import TOPIC_CONFIG_KEYS, LogConfig
from kgroups.storage.log import AppendResult, PartitionLog, TimestampOffset
from kgroups.storage.log_manager import LogManager
from kgroups.storage.records import BatchHeader, Record, decode_records, encode_batch

__all__ = [
    "TOPIC_CONFIG_KEYS",
    "AppendResult",
    "BatchHeader",
    "LogConfig",
    "LogManager",
    "PartitionLog",
    "Record",
    "TimestampOffset",
    "decode_records",
    "encode_batch",
]
