"""What a shard's timers carry: Kafka's delayed operations, as plain data.

Each names the group incarnation it was set for, so it does nothing if the
group has since been deleted and created again.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kgroups.coordinator.timers import TimerKey, TimerKind, TimerQueue

# A new member's JoinGroup may stay parked this long before the member is
# dropped; its client will have given up and will retry with a new request.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True, slots=True)
class MemberDeadline:
    """DelayedHeartbeat: the member's session, or a pending member's wait."""

    incarnation: int
    pending: bool


@dataclass(frozen=True, slots=True)
class JoinDeadline:
    """DelayedJoin, or InitialDelayedJoin while the group fills up from Empty."""

    incarnation: int
    initial: bool = False
    delay_ms: int = 0
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class SyncDeadline:
    """DelayedSync: members of this generation that have not sent SyncGroup."""

    incarnation: int
    generation_id: int


@dataclass(frozen=True, slots=True)
class RetentionCheck:
    """The periodic sweep for expired offsets (offsets.retention.check.interval.ms)."""


DelayedOperation = MemberDeadline | JoinDeadline | SyncDeadline | RetentionCheck
Timers = TimerQueue[TimerKey, DelayedOperation]


# Kept: a heartbeat finds its member's key again, and the timer queue's dicts
# find the very same key object by identity, without comparing fields.
@lru_cache(maxsize=1 << 16)
def member_key(group_id: str, member_id: str) -> TimerKey:
    return TimerKey(TimerKind.MEMBER, group_id, member_id)


# Deadlines are immutable: one object per incarnation serves every heartbeat.
@lru_cache(maxsize=1 << 12)
def member_deadline(incarnation: int, pending: bool) -> MemberDeadline:
    return MemberDeadline(incarnation, pending)


def join_key(group_id: str) -> TimerKey:
    return TimerKey(TimerKind.JOIN, group_id)


def sync_key(group_id: str) -> TimerKey:
    return TimerKey(TimerKind.SYNC, group_id)


RETENTION_KEY = TimerKey(TimerKind.RETENTION, "")
