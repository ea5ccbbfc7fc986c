"""Share partitions (KIP-932): which records of a topic partition a share
group has handed out, to whom, until when, and how often.

Sans IO: the caller passes the log batches it read and the time; the state
machine answers with the records acquired and the deadlines it keeps.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name is imported with its first use: a broker imports this package with
# its share partition manager, and the share partitions' state machine is no
# small import for a broker whose clients may never join a share group.
_HOMES = {
    "AcknowledgeType": "states",
    "AcknowledgementBatch": "partition",
    "AcquiredRange": "partition",
    "RecordState": "states",
    "SharePartition": "partition",
    "SharePartitionConfig": "config",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
