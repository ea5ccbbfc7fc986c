"""What the coordinator reads of an OffsetCommit request.

Two readers make one: kio's newest entity (the general path) and the
connection's own reader (protocol/offset_commit_wire.py), whose named tuples
carry the same attribute names. Both go through the very same handlers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class CommitPartition(Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class CommitTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[CommitPartition]: ...


class CommitRequest(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def generation_id_or_member_epoch(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def group_instance_id(self) -> str | None: ...
    @property
    def topics(self) -> Sequence[CommitTopic]: ...
