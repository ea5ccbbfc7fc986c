"""The states of an in-flight record and the acknowledgements that move it,
with Kafka's wire ids.

::

    AVAILABLE ──acquire──▶ ACQUIRED ──ACCEPT──▶ ACKNOWLEDGED
        ▲                     │ │
        └──RELEASE or lock ───┘ └──REJECT, GAP──▶ ARCHIVED
           timeout (ARCHIVED instead once the delivery count
           reached group.share.delivery.count.limit)

ACKNOWLEDGED and ARCHIVED are final: the share-partition start offset moves
past them. RENEW (KIP-1222, Kafka 4.2) leaves an ACQUIRED record acquired
and starts its lock again.
"""

from __future__ import annotations

import enum


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def final(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    GAP = 0  # an offset with no record (compaction): archived
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
