"""Share partitions (KIP-932): which records of a topic partition a share
group has handed out, to whom, until when, and how often.

Sans IO: the caller passes the log batches it read and the time; the state
machine answers with the records acquired and the deadlines it keeps.
"""

from kgroups.share_partitions.config import SharePartitionConfig
from kgroups.share_partitions.partition import (
    AcknowledgementBatch,
    AcquiredRange,
    SharePartition,
)
from kgroups.share_partitions.states import AcknowledgeType, RecordState

__all__ = [
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRange",
    "RecordState",
    "SharePartition",
    "SharePartitionConfig",
]
