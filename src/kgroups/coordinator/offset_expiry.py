"""Which committed offsets have outlived offsets.retention.minutes (KIP-211).

Offsets of a group with members are kept while the group consumes their
topic (KIP-496); retention counts from when a classic group became Empty,
or, for consumer groups (KIP-848) and groups that only commit (no protocol),
from each commit. Offsets stored with an explicit expiry (old OffsetCommit
versions) expire at that time instead.
"""

from __future__ import annotations

from kgroups.coordinator.group import ClassicGroup
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.state import GroupState
from kgroups.coordinator.subscriptions import CONSUMER_PROTOCOL_TYPE


def expired_offsets(
    group: ClassicGroup,
    now_ms: int,
    retention_ms: int,
    consumer_group_topics: frozenset[str] | None = None,
) -> list[TopicPartition]:
    """``consumer_group_topics``: the topics a consumer group (KIP-848) with
    members subscribes to, by name or regex; its offsets are held in a group
    without protocol."""
    kept_topics: frozenset[str] = frozenset()
    empty_since = group.state_timestamp_ms
    if consumer_group_topics is not None:
        kept_topics = consumer_group_topics

        def base(offset: CommittedOffset) -> int:
            return offset.commit_timestamp_ms

    elif group.protocol_type is not None and group.is_in(GroupState.EMPTY):

        def base(offset: CommittedOffset) -> int:
            return offset.commit_timestamp_ms if empty_since is None else empty_since

    elif (
        group.protocol_type == CONSUMER_PROTOCOL_TYPE
        and group.subscribed_topics is not None
        and group.is_in(GroupState.STABLE)
    ):
        kept_topics = group.subscribed_topics

        def base(offset: CommittedOffset) -> int:
            return offset.commit_timestamp_ms

    elif group.protocol_type is None:

        def base(offset: CommittedOffset) -> int:
            return offset.commit_timestamp_ms

    else:
        # Rebalancing, or members whose subscriptions we cannot read: keep all.
        return []

    expired = []
    for partition, offset in group.offsets.items():
        if partition.topic in kept_topics:
            continue
        if offset.expire_timestamp_ms is not None:
            if now_ms >= offset.expire_timestamp_ms:
                expired.append(partition)
        elif now_ms - base(offset) >= retention_ms:
            expired.append(partition)
    return expired
