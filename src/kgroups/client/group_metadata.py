"""A consumer's place in its group, as a transactional producer passes it along with
the offsets it commits (KIP-447): the group coordinator refuses offsets from a
member that is no longer in the group's current generation."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ConsumerGroupMetadata"]


class ConsumerGroupMetadata(NamedTuple):
    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
