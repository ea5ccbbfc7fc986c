"""A broker's share partitions and share sessions, sans IO: the state the
ShareFetch and ShareAcknowledge handlers read and change.

A share partition whose state was read from the share coordinator
(``stored``) takes it up at its first use; one of a deleted group is
dropped, and named in ``forgotten`` for its stored state to go; one whose
start was reset is named in ``take_reset`` for its state to start again.

A share partition is made on the first fetch of its group; its start offset
is where ``share.auto.offset.reset`` says (the handler asks the log). A
member that leaves its group (or whose session expires) has its acquired
records released in every partition of the group.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from kgroups.share_partitions.config import SharePartitionConfig
from kgroups.share_partitions.stored_views import StoredViews

# The state machine and the sessions are imported with the first share
# partition and the first share session: a broker makes its manager at start.
if TYPE_CHECKING:
    from kgroups.share_partitions.partition import SharePartition
    from kgroups.share_partitions.sessions import ShareSessionCache
    from kgroups.share_partitions.state_records import StateBatch

PartitionKey = tuple[str, uuid.UUID, int]
"""(group id, topic id, partition)."""


class SharePartitionManager:
    def __init__(self, config: SharePartitionConfig, max_sessions: int) -> None:
        self.config = config
        self._max_sessions = max_sessions
        self._sessions: ShareSessionCache | None = None
        self._partitions: dict[PartitionKey, SharePartition] = {}
        self._by_group: dict[str, set[PartitionKey]] = {}
        # State read back from __share_group_state, taken up at each share
        # partition's first use.
        self.stored: dict[PartitionKey, tuple[int, tuple[StateBatch, ...]]] = {}
        self.stored_views = StoredViews()
        # Share partitions of deleted groups whose stored state must go.
        self.forgotten: list[PartitionKey] = []
        # Share partitions whose start was reset, whose state starts again.
        self._reset: list[PartitionKey] = []
        # Told when records of a share partition are offered again (a release,
        # a member gone), so fetches waiting for records look again.
        self.on_available: Callable[[PartitionKey], None] | None = None

    @property
    def sessions(self) -> ShareSessionCache:
        if self._sessions is None:
            from kgroups.share_partitions.sessions import ShareSessionCache

            self._sessions = ShareSessionCache(self._max_sessions)
        return self._sessions

    def available_again(self, key: PartitionKey) -> None:
        if self.on_available is not None:
            self.on_available(key)

    def get(self, key: PartitionKey) -> SharePartition | None:
        return self._partitions.get(key)

    def get_or_create(
        self,
        key: PartitionKey,
        start_offset: Callable[[], int],
        config: SharePartitionConfig | None = None,
    ) -> SharePartition:
        """``config``: the group's own (its share.record.lock.duration.ms), if any."""
        partition = self._partitions.get(key)
        if partition is None:
            from kgroups.share_partitions.partition import SharePartition
            from kgroups.share_partitions.persisted import restored

            stored = self.stored.pop(key, None)
            if stored is None:
                partition = SharePartition(config or self.config, start_offset())
                partition.changed = True  # where it starts is kept at once
            else:
                partition = restored(config or self.config, *stored)
            self._partitions[key] = partition
            self._by_group.setdefault(key[0], set()).add(key)
        return partition

    def of_group(self, group_id: str) -> Iterator[tuple[PartitionKey, SharePartition]]:
        for key in sorted(self._by_group.get(group_id, ()), key=lambda k: (str(k[1]), k[2])):
            yield key, self._partitions[key]

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left its group: what it acquired is offered again, and
        its share session is gone."""
        self.sessions.close(group_id, member_id)
        for key, partition in self.of_group(group_id):
            if partition.release_member(member_id):
                self.available_again(key)

    def expire_locks(self, now_ms: int) -> None:
        """End every delivery whose lock is due (each share partition with
        none due costs a comparison), offering its records again."""
        for key, partition in self._partitions.items():
            if partition.expire(now_ms):
                self.available_again(key)

    def partitions(self) -> list[tuple[PartitionKey, SharePartition]]:
        return list(self._partitions.items())

    def stored_partitions(
        self,
        elsewhere: Mapping[PartitionKey, object] | None = None,
        unpack: Callable[[object], tuple[int, tuple[StateBatch, ...]]] | None = None,
    ) -> list[tuple[PartitionKey, SharePartition]]:
        """The share partitions whose stored state no use has taken up yet,
        rebuilt from it to be read (not served): each kept until its stored
        state changes or it is taken up. ``elsewhere``: more such states (the
        share coordinator's records), each made (start, batches) by ``unpack``."""
        if not elsewhere:
            return self.stored_views.views(self.stored, self.config)
        assert unpack is not None
        states: dict[PartitionKey, object] = dict(elsewhere)
        states.update(self.stored)

        def unpack_any(state: object) -> tuple[int, tuple[StateBatch, ...]]:
            if isinstance(state, tuple):
                return cast("tuple[int, tuple[StateBatch, ...]]", state)
            return unpack(state)

        return self.stored_views.views(states, self.config, unpack_any)

    def connection_closed(self, connection: object) -> None:
        """The sessions of a closed connection end, their records released."""
        if connection is None or self._sessions is None:
            return
        for session in self._sessions.on_connection(connection):
            self.release_member(session.group_id, session.member_id)

    def set_start(self, key: PartitionKey, start_offset: int) -> None:
        """AlterShareGroupOffsets: the share partition starts again at
        ``start_offset``, nothing in flight."""
        from kgroups.share_partitions.partition import SharePartition

        self.stored.pop(key, None)
        partition = SharePartition(self.config, start_offset)
        self._partitions[key] = partition
        self._by_group.setdefault(key[0], set()).add(key)
        self._reset.append(key)

    def take_reset(self) -> list[PartitionKey]:
        """The share partitions whose start was reset since last taken."""
        reset, self._reset = self._reset, []
        return reset

    def unload(self, key: PartitionKey) -> None:
        """Forget a share partition held here (another broker leads it now,
        or its state moved on): its stored state stays where it is."""
        self._partitions.pop(key, None)
        self.stored.pop(key, None)
        self._by_group.get(key[0], set()).discard(key)

    def forget_topic(self, group_id: str, topic_id: uuid.UUID) -> None:
        """DeleteShareGroupOffsets: the group's share partitions of the topic
        go, and their stored state; the next fetch starts them afresh."""
        keys = {k for k in self._by_group.get(group_id, set()) if k[1] == topic_id}
        keys |= {k for k in self.stored if k[0] == group_id and k[1] == topic_id}
        for key in keys:
            self._partitions.pop(key, None)
            self.stored.pop(key, None)
            self._by_group.get(group_id, set()).discard(key)
            self.forgotten.append(key)

    def member_expired(self, group_id: str, member_id: str) -> None:
        self.release_member(group_id, member_id)

    def group_deleted(self, group_id: str) -> None:
        self.drop_group(group_id)

    def drop_group(self, group_id: str) -> None:
        """The group was deleted: its share partitions' state goes with it."""
        for key in self._by_group.pop(group_id, set()):
            del self._partitions[key]
            self.forgotten.append(key)
        for key in [k for k in self.stored if k[0] == group_id]:
            del self.stored[key]
            self.forgotten.append(key)

    def drop_topics(self, exists: Callable[[uuid.UUID], bool]) -> None:
        """Topics were deleted: the share partitions of those no longer there
        go, and their stored state."""
        for key in [k for k in self._partitions if not exists(k[1])]:
            del self._partitions[key]
            self._by_group[key[0]].discard(key)
            self.forgotten.append(key)
        for key in [k for k in self.stored if not exists(k[1])]:
            del self.stored[key]
            self.forgotten.append(key)

    def take_changed(
        self, keys: Iterable[PartitionKey] | None = None
    ) -> list[tuple[PartitionKey, SharePartition]]:
        """The share partitions (among ``keys``; None: all) whose state
        changed since they were last taken."""
        if keys is None:
            candidates = list(self._partitions.items())
        else:
            candidates = [(k, sp) for k in keys if (sp := self._partitions.get(k)) is not None]
        changed = [(k, sp) for k, sp in candidates if sp.changed]
        for _key, sp in changed:
            sp.changed = False
        return changed
