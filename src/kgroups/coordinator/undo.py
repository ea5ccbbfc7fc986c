"""What it takes to back out of a batch whose append failed.

The coordinator applies its records as soon as it produces them, so a failed
append must be taken back. Each batch's token carries one of these per change
it made; ``append_failed`` answers the requests the lost batch would have
answered and restores what it can without overwriting anything newer.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kgroups.coordinator.member import Protocols
from kgroups.coordinator.offsets import CommittedOffset, TopicPartition
from kgroups.coordinator.records import GroupMetadataValue


@dataclass(frozen=True, slots=True)
class OffsetWrite:
    partition: TopicPartition
    written: CommittedOffset
    previous: CommittedOffset | None


@dataclass(frozen=True, slots=True)
class UndoOffsetCommit:
    group_id: str
    reply_to: object
    writes: tuple[OffsetWrite, ...]
    # Every partition of the request in order, with its error if it had one
    # before the append (None: it was written, so it gets the append error).
    outcome: tuple[tuple[TopicPartition, ErrorCode | None], ...]
    created_group: bool


@dataclass(frozen=True, slots=True)
class UndoAssignment:
    """The leader's SyncGroup: answered members get the error, the group rebalances."""

    group_id: str
    generation_id: int
    reply_tos: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class UndoStaticReplacement:
    """A static member's new member id, stored in a Stable group."""

    group_id: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: Protocols
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    old_leader_id: str | None
    reply_to: object
    api_version: int


@dataclass(frozen=True, slots=True)
class RestoredGroup:
    """A deleted group (its last stored metadata, if any) and deleted offsets."""

    group_id: str
    metadata: GroupMetadataValue | None
    offsets: tuple[tuple[TopicPartition, CommittedOffset], ...]


@dataclass(frozen=True, slots=True)
class UndoDeleteGroups:
    reply_to: object
    # Every requested group in order, with its error (None: deleted in this batch).
    outcome: tuple[tuple[str, ErrorCode | None], ...]
    restore: tuple[RestoredGroup, ...]


@dataclass(frozen=True, slots=True)
class UndoOffsetDelete:
    reply_to: object
    group_id: str
    restore: RestoredGroup


Undo = (
    UndoOffsetCommit | UndoAssignment | UndoStaticReplacement | UndoDeleteGroups | UndoOffsetDelete
)


def answered_by(undo: Undo) -> tuple[object, ...]:
    """The requests whose answers depended on the batch; the undo answers them anew."""
    if isinstance(undo, UndoAssignment):
        return undo.reply_tos
    return (undo.reply_to,)
