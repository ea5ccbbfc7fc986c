"""One partition of ``__share_group_state``: the state of the share
partitions whose keys Kafka places there, sans IO.

Theory of operation. Each share partition (group, topic id, partition) has
a state epoch (set by InitializeShareGroupState, from the group coordinator),
a leader epoch (raised by the first ReadShareGroupState of each new leader
of the topic partition), a snapshot epoch, a start offset and its state
batches. Every change is a record: a ShareSnapshot holds the whole state, a
ShareUpdate the batches a write brought; after
``share.coordinator.snapshot.update.records.per.snapshot`` updates the next
write is a snapshot again, so loading replays at most that many updates on
top of a snapshot. A change is applied at once by the very ``replay`` that
loading uses, and taken back if its append fails; its answer leaves once its
record is durable (the runtime's driver sees to that).

Fencing, as Kafka's ShareCoordinatorShard: a write or read with a leader
epoch older than the recorded one is FENCED_LEADER_EPOCH (an old leader of
the topic partition cannot overwrite its successor's state); a write or
initialization with an older state epoch is FENCED_STATE_EPOCH (state from
before the group coordinator initialized it again). A write never changes
the leader epoch; only a read does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kgroups.coordinator.append_errors import retriable_append_error
from kgroups.coordinator.context import RequestContext
from kgroups.coordinator.result import Record
from kgroups.errors import ErrorCode
from kgroups.share_coordinator.answers import (
    NEGATIVE_LEADER_EPOCH,
    NEGATIVE_PARTITION_ID,
    NEGATIVE_STATE_EPOCH,
    OK,
    READ_UNINITIALIZED,
    UNINITIALIZED_START_OFFSET,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    WRITE_UNINITIALIZED,
    KeyAnswer,
    refused,
)
from kgroups.share_coordinator.state_batches import combine
from kgroups.share_partitions.state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
)

Key = tuple[str, uuid.UUID, int]
"""(group id, topic id, partition)."""

_DONE_STATES = (2, 4)  # ACKNOWLEDGED, ARCHIVED


@dataclass(frozen=True, slots=True)
class ShareState:
    """A share partition's state as the coordinator keeps it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    create_timestamp: int = 0
    updates_since_snapshot: int = 0

    def delivery_complete_count(self) -> int:
        """Offsets from the start on whose delivery is over (KIP-1226)."""
        if self.start_offset == UNINITIALIZED_START_OFFSET:
            return UNKNOWN_DELIVERY_COMPLETE_COUNT
        return sum(
            b.last_offset - max(b.first_offset, self.start_offset) + 1
            for b in self.state_batches
            if b.delivery_state in _DONE_STATES and b.last_offset >= self.start_offset
        )


@dataclass(slots=True)
class ShareStateResult:
    """Append ``records`` as one batch; once durable send ``replies``."""

    records: list[Record] = field(default_factory=list)
    replies: list[tuple[object, KeyAnswer]] = field(default_factory=list)
    append_token: int | None = None
    producer: None = None


@dataclass(slots=True)
class _InFlight:
    undo: tuple[Key, ShareState | None]
    reply_to: object


class ShareCoordinatorShard:
    def __init__(
        self,
        partition: int,
        updates_per_snapshot: int,
        partition_exists: Callable[[uuid.UUID, int], bool],
    ) -> None:
        self.partition = partition
        self._updates_per_snapshot = updates_per_snapshot
        self._partition_exists = partition_exists
        self._states: dict[Key, ShareState] = {}
        self._loading = False
        self._next_batch = 0
        # Changes applied whose records are not durable yet, by batch id.
        self._in_flight: dict[int, _InFlight] = {}

    # -- reading ---------------------------------------------------------------

    def state(self, key: Key) -> ShareState | None:
        return self._states.get(key)

    def share_partitions(self) -> list[Key]:
        return list(self._states)

    # -- requests --------------------------------------------------------------

    def write(
        self,
        key: Key,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        ctx: RequestContext,
        now_ms: int,
    ) -> ShareStateResult:
        """WriteShareGroupState for one share partition."""
        error = self._common_checks(key)
        if error is None and leader_epoch < 0:
            error = refused(ErrorCode.invalid_request, NEGATIVE_LEADER_EPOCH)
        if error is None and state_epoch < 0:
            error = refused(ErrorCode.invalid_request, NEGATIVE_STATE_EPOCH)
        current = self._states.get(key)
        if error is None and current is None:
            error = refused(ErrorCode.invalid_request, WRITE_UNINITIALIZED)
        if error is None and current is not None:
            error = self._fenced(current, leader_epoch, state_epoch) or self._unknown(key)
        if error is not None or current is None:
            return _answer(ctx, error or OK)
        start = max(start_offset, current.start_offset)
        if current.updates_since_snapshot >= self._updates_per_snapshot:
            record = _snapshot_record(
                key,
                ShareSnapshotValue(
                    snapshot_epoch=current.snapshot_epoch + 1,
                    state_epoch=current.state_epoch,
                    leader_epoch=current.leader_epoch,
                    start_offset=start,
                    create_timestamp=now_ms,
                    write_timestamp=now_ms,
                    state_batches=combine(current.state_batches, batches, start),
                ),
            )
        else:
            update = ShareUpdateValue(
                snapshot_epoch=current.snapshot_epoch,
                leader_epoch=current.leader_epoch,
                start_offset=start,
                state_batches=combine((), batches, start),
            )
            record = (encode_key(ShareStateKey(SHARE_UPDATE, *key)), encode_update(update))
        return self._change(key, record, ctx, OK)

    def read(
        self, key: Key, leader_epoch: int, ctx: RequestContext, now_ms: int
    ) -> ShareStateResult:
        """ReadShareGroupState for one share partition: its state, and a new
        leader's epoch recorded (which fences its predecessors' writes)."""
        error = self._common_checks(key)
        if error is None and leader_epoch < 0:
            error = refused(ErrorCode.invalid_request, NEGATIVE_LEADER_EPOCH)
        current = self._states.get(key)
        if error is None and current is None:
            error = refused(ErrorCode.invalid_request, READ_UNINITIALIZED)
        if error is None and current is not None:
            error = self._fenced(current, leader_epoch, None) or self._unknown(key)
        if error is not None or current is None:
            return _answer(ctx, error or OK)
        answer = KeyAnswer(
            state_epoch=current.state_epoch,
            leader_epoch=leader_epoch,
            start_offset=current.start_offset,
            state_batches=current.state_batches,
        )
        if leader_epoch == current.leader_epoch:
            return _answer(ctx, answer)
        # The whole state again (Kafka writes no batches here): each update
        # holds the whole state, which compaction of the topic relies on.
        update = ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=current.start_offset,
            state_batches=current.state_batches,
        )
        if current.updates_since_snapshot >= self._updates_per_snapshot:
            record = _snapshot_record(
                key,
                ShareSnapshotValue(
                    current.snapshot_epoch + 1,
                    current.state_epoch,
                    leader_epoch,
                    current.start_offset,
                    now_ms,
                    now_ms,
                    current.state_batches,
                ),
            )
        else:
            record = (encode_key(ShareStateKey(SHARE_UPDATE, *key)), encode_update(update))
        return self._change(key, record, ctx, answer)

    def initialize(
        self, key: Key, state_epoch: int, start_offset: int, ctx: RequestContext, now_ms: int
    ) -> ShareStateResult:
        """InitializeShareGroupState for one share partition: a fresh
        snapshot at ``state_epoch`` starting at ``start_offset`` (-1: where
        the group's share.auto.offset.reset says, chosen by its leader)."""
        error = self._common_checks(key)
        if error is None and state_epoch < 0:
            error = refused(ErrorCode.invalid_request, NEGATIVE_STATE_EPOCH)
        current = self._states.get(key)
        if error is None and current is not None and current.state_epoch > state_epoch:
            error = refused(ErrorCode.fenced_state_epoch)
        error = error or self._unknown(key)
        if error is not None:
            return _answer(ctx, error)
        if (
            current is not None
            and current.state_epoch == state_epoch
            and current.start_offset == start_offset
        ):
            return _answer(ctx, OK)
        snapshot = ShareSnapshotValue(
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            state_epoch=state_epoch,
            leader_epoch=0,
            start_offset=start_offset,
            create_timestamp=now_ms,
            write_timestamp=now_ms,
            state_batches=(),
        )
        return self._change(key, _snapshot_record(key, snapshot), ctx, OK)

    def delete(self, key: Key, ctx: RequestContext, now_ms: int) -> ShareStateResult:
        """DeleteShareGroupState for one share partition: its tombstone."""
        error = self._common_checks(key)
        if error is not None:
            return _answer(ctx, error)
        if key not in self._states:
            return _answer(ctx, OK)
        # Both kinds of key: in a compacted topic, an update outliving its
        # snapshot's tombstone would bring the state back at loading.
        tombstones: list[Record] = [
            (encode_key(ShareStateKey(kind, *key)), None) for kind in (SHARE_SNAPSHOT, SHARE_UPDATE)
        ]
        return self._change(key, tombstones, ctx, OK)

    def summary(self, key: Key, ctx: RequestContext, now_ms: int) -> ShareStateResult:
        """ReadShareGroupStateSummary for one share partition; one never
        initialized is answered as such, without an error."""
        error = self._common_checks(key)
        if error is not None:
            return _answer(ctx, error)
        current = self._states.get(key)
        if current is None:
            return _answer(ctx, KeyAnswer(start_offset=UNINITIALIZED_START_OFFSET))
        return _answer(
            ctx,
            KeyAnswer(
                state_epoch=current.state_epoch,
                leader_epoch=current.leader_epoch,
                start_offset=current.start_offset,
                delivery_complete_count=current.delivery_complete_count(),
            ),
        )

    def _common_checks(self, key: Key) -> KeyAnswer | None:
        if self._loading:
            return refused(ErrorCode.coordinator_load_in_progress)
        if key[2] < 0:
            return refused(ErrorCode.invalid_request, NEGATIVE_PARTITION_ID)
        return None

    def _fenced(
        self, current: ShareState, leader_epoch: int, state_epoch: int | None
    ) -> KeyAnswer | None:
        if current.leader_epoch > leader_epoch:
            return refused(ErrorCode.fenced_leader_epoch)
        if state_epoch is not None and current.state_epoch > state_epoch:
            return refused(ErrorCode.fenced_state_epoch)
        return None

    def _unknown(self, key: Key) -> KeyAnswer | None:
        if not self._partition_exists(key[1], key[2]):
            return refused(ErrorCode.unknown_topic_or_partition)
        return None

    def _change(
        self, key: Key, records: Record | list[Record], ctx: RequestContext, answer: KeyAnswer
    ) -> ShareStateResult:
        """Apply the records now (as replay would), keep how to take them back."""
        batch = records if isinstance(records, list) else [records]
        batch_id = self._next_batch
        self._next_batch += 1
        self._in_flight[batch_id] = _InFlight((key, self._states.get(key)), ctx.reply_to)
        for record in batch:
            self.replay(*record)
        return ShareStateResult(batch, [(ctx.reply_to, answer)], batch_id)

    # -- replay ----------------------------------------------------------------

    def replay(self, raw_key: bytes, raw_value: bytes | None) -> None:
        """Apply one record of the partition, in log order."""
        state_key = decode_key(raw_key)
        key = (state_key.group_id, state_key.topic_id, state_key.partition)
        if raw_value is None:
            self._states.pop(key, None)
            return
        current = self._states.get(key)
        if state_key.record_type == SHARE_SNAPSHOT:
            snapshot = decode_snapshot(raw_value)
            leader_epoch = snapshot.leader_epoch
            if current is not None:  # the highest seen, as Kafka's leader epoch map
                leader_epoch = max(leader_epoch, current.leader_epoch)
            self._states[key] = ShareState(
                snapshot.snapshot_epoch,
                snapshot.state_epoch,
                leader_epoch,
                snapshot.start_offset,
                snapshot.state_batches,
                snapshot.create_timestamp,
            )
            return
        update = decode_update(raw_value)
        if current is None:
            # An update whose snapshot is gone (deleted): the update alone.
            self._states[key] = ShareState(
                update.snapshot_epoch,
                0,
                update.leader_epoch,
                update.start_offset,
                update.state_batches,
            )
            return
        start = current.start_offset if update.start_offset < 0 else update.start_offset
        self._states[key] = replace(
            current,
            leader_epoch=max(current.leader_epoch, update.leader_epoch),
            start_offset=start,
            state_batches=combine(current.state_batches, update.state_batches, start),
            updates_since_snapshot=current.updates_since_snapshot + 1,
        )

    # -- what the runtime calls ------------------------------------------------

    def begin_load(self) -> None:
        self._loading = True

    def finish_load(self) -> None:
        self._loading = False

    def unload(self, now_ms: int) -> ShareStateResult:
        return ShareStateResult()

    def append_durable(self, append_token: int | None) -> None:
        if append_token is None:
            return
        for batch_id in [b for b in self._in_flight if b <= append_token]:
            del self._in_flight[batch_id]

    def append_failed(
        self, append_token: int | None, error: ErrorCode, now_ms: int
    ) -> ShareStateResult:
        """The batch (and any after it) was not stored: take its changes back,
        newest first, and answer their requests with the error."""
        result = ShareStateResult()
        if append_token is None:
            return result
        answer = refused(retriable_append_error(error))
        for batch_id in sorted((b for b in self._in_flight if b >= append_token), reverse=True):
            change = self._in_flight.pop(batch_id)
            key, before = change.undo
            if before is None:
                self._states.pop(key, None)
            else:
                self._states[key] = before
            result.replies.append((change.reply_to, answer))
        return result

    def on_timer(self, now_ms: int) -> ShareStateResult:
        return ShareStateResult()

    def next_deadline_ms(self) -> int | None:
        return None

    def nothing_due_before(self, ms: int) -> bool:
        return True


def _snapshot_record(key: Key, value: ShareSnapshotValue) -> Record:
    return encode_key(ShareStateKey(SHARE_SNAPSHOT, *key)), encode_snapshot(value)


def _answer(ctx: RequestContext, answer: KeyAnswer) -> ShareStateResult:
    return ShareStateResult(replies=[(ctx.reply_to, answer)])
