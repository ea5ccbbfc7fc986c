"""What a share partition's in-flight records add up to, kept as they change
state, so that the metrics endpoint and DescribeShareGroupOffsets read it
without walking the records.

Gauges (records between the start offset and the end offset, now):

- ``acquired``: ACQUIRED records, and ``acquired_by_delivery`` the same by
  delivery count (the delivery they are on);
- ``delivery_complete``: ACKNOWLEDGED and ARCHIVED records (Kafka's
  deliveryCompleteCount, KIP-1226): what the lag leaves out.

Counters (since the share partition was made or loaded):

- ``lock_timeouts``: records whose acquisition lock ran out while acquired,
  whether offered again or archived (Kafka's AcquisitionLockTimeoutPerSec
  counts the records of each lock that fires);
- ``archived``: deliveries that ended archived, by reason: the delivery
  count limit reached (a lock timeout, a RELEASE, a member gone), a REJECT,
  a GAP. Records archived without a delivery (transaction markers, aborted
  transactions' records) are not counted.
"""

from __future__ import annotations

DELIVERY_COUNT_LIMIT = "delivery_count_limit"
REJECTED = "rejected"
GAP = "gap"
ARCHIVE_REASONS = (DELIVERY_COUNT_LIMIT, REJECTED, GAP)


class RecordTally:
    __slots__ = (
        "acquired",
        "acquired_by_delivery",
        "archived",
        "delivery_complete",
        "lock_timeouts",
    )

    def __init__(self) -> None:
        self.acquired = 0
        self.acquired_by_delivery: dict[int, int] = {}
        self.delivery_complete = 0
        self.lock_timeouts = 0
        self.archived = dict.fromkeys(ARCHIVE_REASONS, 0)

    def acquire(self, delivery_count: int, records: int) -> None:
        """``records`` became ACQUIRED, on delivery ``delivery_count``."""
        self.acquired += records
        by = self.acquired_by_delivery
        by[delivery_count] = by.get(delivery_count, 0) + records

    def unacquire(self, delivery_count: int, records: int) -> None:
        """``records`` on delivery ``delivery_count`` are no longer ACQUIRED."""
        if not records:
            return  # records before the start offset, which are not counted
        self.acquired -= records
        by = self.acquired_by_delivery
        left = by[delivery_count] - records
        if left:
            by[delivery_count] = left
        else:
            del by[delivery_count]

    def complete(self, records: int) -> None:
        """``records`` became ACKNOWLEDGED or ARCHIVED."""
        self.delivery_complete += records

    def archive(self, reason: str, records: int) -> None:
        self.delivery_complete += records
        self.archived[reason] += records

    def clear_gauges(self) -> None:
        """Before counting the records again (the counters stay)."""
        self.acquired = 0
        self.acquired_by_delivery.clear()
        self.delivery_complete = 0
