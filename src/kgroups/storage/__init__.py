"""Partition logs: record batches, segments, indexes, recovery and retention."""

from kgroups.partitions.config import TOPIC_CONFIG_KEYS, LogConfig
from kgroups.records.batch import BatchHeader, Record, decode_records, encode_batch
from kgroups.storage.log import AppendResult, PartitionLog, TimestampOffset
from kgroups.storage.log_manager import LogManager

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
