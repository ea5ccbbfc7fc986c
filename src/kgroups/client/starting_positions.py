"""Where an assigned partition starts reading: its group's committed offset,
else the offset that ``auto.offset.reset`` asks for, found by ListOffsets.

AsyncConsumer calls these from poll() and position() for the partitions that
have no position yet.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from kgroups.client.consumer_record import OffsetAndMetadata, TopicPartition
from kgroups.client.exceptions import NoOffsetForPartitionError
from kgroups.client.offset_committer import OffsetCommitter
from kgroups.client.offset_lookup import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kgroups.client.subscription_state import EARLIEST, NONE, SubscriptionState

__all__ = ["OffsetsForTimestamps", "reset_positions", "seek_to_committed"]

log = logging.getLogger(__name__)

OffsetsForTimestamps = Callable[
    [dict[TopicPartition, int], float | None], Awaitable[dict[TopicPartition, int]]
]
"""ListOffsets for each partition's timestamp, until a deadline (None: the
consumer's default.api.timeout.ms from now)."""


async def seek_to_committed(
    subs: SubscriptionState,
    initializing: list[TopicPartition],
    committer: OffsetCommitter | None,
    deadline: float | None,
) -> bool:
    """Start each partition at its committed offset; those without one (or
    without a group) await a reset. False on timeout."""
    states = {tp: subs.state(tp) for tp in initializing}
    committed: Mapping[TopicPartition, OffsetAndMetadata | None] = {}
    if committer is not None:
        try:
            committed = await committer.fetch(set(initializing), deadline, retry_stale_epoch=True)
        except TimeoutError:
            return False
    for tp, state in states.items():
        if subs.state_or_none(tp) is not state or state.position is not None:
            continue  # revoked, or positioned, while we waited
        if state.reset_strategy is not None:
            continue
        offset = committed.get(tp)
        if offset is not None:
            log.info("%s starts at committed offset %s", tp, offset.offset)
            subs.seek(tp, offset.offset)
        else:
            subs.request_reset([tp])
    return True


async def reset_positions(
    subs: SubscriptionState,
    resets: Mapping[TopicPartition, str],
    offsets_for: OffsetsForTimestamps,
    deadline: float | None,
) -> bool:
    """Move each partition awaiting a reset to its earliest or latest offset.
    Raises NoOffsetForPartitionError for those whose strategy is none; False
    on timeout."""
    stuck = sorted(tp for tp, s in resets.items() if s == NONE)
    if stuck:
        raise NoOffsetForPartitionError(stuck)
    reset_states = {tp: subs.state(tp) for tp in resets}
    timestamps = {
        tp: EARLIEST_TIMESTAMP if s == EARLIEST else LATEST_TIMESTAMP for tp, s in resets.items()
    }
    try:
        offsets = await offsets_for(timestamps, deadline)
    except TimeoutError:
        return False
    for tp, found in offsets.items():
        pending = reset_states[tp]
        if subs.state_or_none(tp) is pending and pending.reset_strategy is not None:
            log.info("%s reset to offset %s (%s)", tp, found, pending.reset_strategy)
            subs.seek(tp, found)
    return True
