"""The share coordinator's shard, as Kafka's ShareCoordinatorShardTest has
it: initialization, writes as ShareSnapshot then ShareUpdate records, a
snapshot again after the configured number of updates, leader and state
epoch fencing, reads that record a new leader epoch, summaries, deletion,
a failed append taken back, and loading by replay of the same records."""

from __future__ import annotations

import uuid

from kgroups.coordinator.context import RequestContext
from kgroups.errors import ErrorCode
from kgroups.share_coordinator.answers import KeyAnswer
from kgroups.share_coordinator.shard import ShareCoordinatorShard, ShareStateResult
from kgroups.share_coordinator.state_batches import combine
from kgroups.share_partitions.state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    StateBatch,
    decode_key,
    decode_snapshot,
    decode_update,
)

TOPIC = uuid.UUID(int=7)
KEY = ("g", TOPIC, 0)
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


def shard(updates_per_snapshot: int = 3) -> ShareCoordinatorShard:
    return ShareCoordinatorShard(0, updates_per_snapshot, lambda t, p: t == TOPIC and p < 4)


def ctx() -> RequestContext:
    return RequestContext(0, "broker-1", "", object())


def answer(result: ShareStateResult) -> KeyAnswer:
    ((_to, a),) = result.replies
    return a


def durable(s: ShareCoordinatorShard, result: ShareStateResult) -> KeyAnswer:
    s.append_durable(result.append_token)
    return answer(result)


def initialized(s: ShareCoordinatorShard, state_epoch: int = 1, start: int = 0) -> None:
    assert durable(s, s.initialize(KEY, state_epoch, start, ctx(), 0)).error is ErrorCode.none


def test_a_write_or_read_of_a_share_partition_never_initialized_is_invalid() -> None:
    s = shard()
    write = s.write(KEY, 0, 0, 0, (), ctx(), 0)
    assert answer(write).error is ErrorCode.invalid_request
    assert answer(write).message == "Write operation on uninitialized share partition not allowed."
    assert write.records == []
    read = answer(s.read(KEY, 0, ctx(), 0))
    assert read.error is ErrorCode.invalid_request
    assert read.message == "Read operation on uninitialized share partition not allowed."
    summary = answer(s.summary(KEY, ctx(), 0))
    assert (summary.error, summary.start_offset, summary.state_epoch) == (ErrorCode.none, -1, 0)
    assert summary.delivery_complete_count == -1


def test_initialize_writes_a_snapshot_and_writes_then_are_updates() -> None:
    s = shard()
    init = s.initialize(KEY, 3, 10, ctx(), 5)
    ((raw_key, raw_value),) = init.records
    assert decode_key(raw_key).record_type == SHARE_SNAPSHOT
    snapshot = decode_snapshot(raw_value or b"")
    assert (snapshot.snapshot_epoch, snapshot.state_epoch, snapshot.start_offset) == (0, 3, 10)
    durable(s, init)
    batches = (StateBatch(10, 12, ACKNOWLEDGED, 1), StateBatch(13, 15, AVAILABLE, 1))
    write = s.write(KEY, 3, 0, 10, batches, ctx(), 6)
    assert durable(s, write).error is ErrorCode.none
    ((raw_key, raw_value),) = write.records
    assert decode_key(raw_key).record_type == SHARE_UPDATE
    assert decode_update(raw_value or b"").state_batches == batches
    read = answer(s.read(KEY, 0, ctx(), 7))
    assert (read.state_epoch, read.start_offset, read.state_batches) == (3, 10, batches)
    summary = answer(s.summary(KEY, ctx(), 7))
    assert summary.delivery_complete_count == 3


def test_initialize_again_at_the_same_epoch_and_start_writes_nothing() -> None:
    s = shard()
    initialized(s, 2, 5)
    again = s.initialize(KEY, 2, 5, ctx(), 1)
    assert again.records == [] and answer(again).error is ErrorCode.none
    older = answer(s.initialize(KEY, 1, 5, ctx(), 1))
    assert older.error is ErrorCode.fenced_state_epoch


def test_after_the_configured_updates_the_next_write_is_a_snapshot() -> None:
    s = shard(updates_per_snapshot=2)
    initialized(s)
    kinds = []
    for i in range(4):
        result = s.write(KEY, 1, 0, i, (StateBatch(i, i, ACKNOWLEDGED, 1),), ctx(), i)
        durable(s, result)
        kinds.append(decode_key(result.records[0][0]).record_type)
    assert kinds == [SHARE_UPDATE, SHARE_UPDATE, SHARE_SNAPSHOT, SHARE_UPDATE]
    snapshot = s.state(KEY)
    assert snapshot is not None and snapshot.snapshot_epoch == 1


def test_a_write_with_an_older_leader_or_state_epoch_is_fenced() -> None:
    s = shard()
    initialized(s, state_epoch=2)
    assert durable(s, s.read(KEY, 5, ctx(), 0)).error is ErrorCode.none
    old_leader = answer(s.write(KEY, 2, 4, 0, (), ctx(), 0))
    assert old_leader.error is ErrorCode.fenced_leader_epoch
    old_state = answer(s.write(KEY, 1, 5, 0, (), ctx(), 0))
    assert old_state.error is ErrorCode.fenced_state_epoch
    assert answer(s.read(KEY, 4, ctx(), 0)).error is ErrorCode.fenced_leader_epoch
    assert answer(s.write(KEY, 2, 5, 0, (), ctx(), 0)).error is ErrorCode.none


def test_a_read_by_a_new_leader_records_its_epoch_and_a_read_at_it_writes_nothing() -> None:
    s = shard()
    initialized(s)
    first = s.read(KEY, 3, ctx(), 0)
    assert len(first.records) == 1
    assert decode_update(first.records[0][1] or b"").leader_epoch == 3
    durable(s, first)
    assert s.read(KEY, 3, ctx(), 0).records == []


def test_a_write_never_moves_the_start_back() -> None:
    s = shard()
    initialized(s, start=10)
    durable(s, s.write(KEY, 1, 0, 4, (StateBatch(2, 12, AVAILABLE, 1),), ctx(), 0))
    state = s.state(KEY)
    assert state is not None
    assert state.start_offset == 10
    assert state.state_batches == (StateBatch(10, 12, AVAILABLE, 1),)


def test_delete_writes_a_tombstone_and_the_share_partition_is_gone() -> None:
    s = shard()
    initialized(s)
    deleted = s.delete(KEY, ctx(), 0)
    assert deleted.records[0][1] is None
    durable(s, deleted)
    assert answer(s.summary(KEY, ctx(), 0)).start_offset == -1
    nothing = s.delete(KEY, ctx(), 0)
    assert nothing.records == [] and answer(nothing).error is ErrorCode.none


def test_a_failed_append_is_taken_back_and_answered_with_a_coordinator_error() -> None:
    s = shard()
    initialized(s)
    write = s.write(KEY, 1, 0, 0, (StateBatch(0, 3, ACKNOWLEDGED, 1),), ctx(), 0)
    applied = s.state(KEY)
    assert applied is not None and applied.state_batches == (StateBatch(0, 3, ACKNOWLEDGED, 1),)
    failed = s.append_failed(write.append_token, ErrorCode.not_leader_or_follower, 0)
    assert answer(failed).error is ErrorCode.not_coordinator
    state = s.state(KEY)
    assert state is not None and state.state_batches == ()


def test_loading_answers_load_in_progress_and_replay_rebuilds_the_state() -> None:
    s = shard(updates_per_snapshot=1)
    records = []
    for result in (
        s.initialize(KEY, 1, 0, ctx(), 0),
        s.read(KEY, 2, ctx(), 0),
        s.write(KEY, 1, 2, 0, (StateBatch(0, 1, ACKNOWLEDGED, 1),), ctx(), 0),
        s.write(KEY, 1, 2, 2, (StateBatch(2, 4, AVAILABLE, 2),), ctx(), 0),
    ):
        durable(s, result)
        records.extend(result.records)
    loaded = shard(updates_per_snapshot=1)
    loaded.begin_load()
    assert answer(loaded.read(KEY, 2, ctx(), 0)).error is ErrorCode.coordinator_load_in_progress
    for raw_key, raw_value in records:
        loaded.replay(raw_key, raw_value)
    loaded.finish_load()
    assert loaded.state(KEY) == s.state(KEY)
    state = loaded.state(KEY)
    assert state is not None
    assert (state.leader_epoch, state.start_offset) == (2, 2)
    assert state.state_batches == (StateBatch(2, 4, AVAILABLE, 2),)


def test_a_negative_partition_or_an_unknown_topic_is_refused() -> None:
    s = shard()
    negative = answer(s.initialize(("g", TOPIC, -1), 0, 0, ctx(), 0))
    assert negative.error is ErrorCode.invalid_request
    assert negative.message == "The partition id cannot be a negative number."
    unknown = answer(s.initialize(("g", uuid.UUID(int=8), 0), 0, 0, ctx(), 0))
    assert unknown.error is ErrorCode.unknown_topic_or_partition


def test_written_batches_replace_the_kept_ones_for_their_offsets() -> None:
    kept = (StateBatch(0, 9, AVAILABLE, 1),)
    written = (StateBatch(3, 4, ACKNOWLEDGED, 1),)
    assert combine(kept, written, 2) == (
        StateBatch(2, 2, AVAILABLE, 1),
        StateBatch(3, 4, ACKNOWLEDGED, 1),
        StateBatch(5, 9, AVAILABLE, 1),
    )
    assert combine((StateBatch(0, 1, ARCHIVED, 5),), (StateBatch(2, 3, ARCHIVED, 5),), 0) == (
        StateBatch(0, 3, ARCHIVED, 5),
    )


def test_the_newest_record_of_each_key_is_enough_to_load_as_compaction_keeps_it() -> None:
    s = shard(updates_per_snapshot=10)
    records = []
    for result in (
        s.initialize(KEY, 1, 0, ctx(), 0),
        s.write(KEY, 1, 0, 0, (StateBatch(0, 4, AVAILABLE, 1),), ctx(), 0),
        s.write(
            KEY, 1, 0, 2, (StateBatch(2, 4, AVAILABLE, 1), StateBatch(5, 6, ARCHIVED, 1)), ctx(), 0
        ),
        s.read(KEY, 4, ctx(), 0),  # a new leader's epoch
    ):
        durable(s, result)
        records.extend(result.records)
    newest = {raw_key: (raw_key, raw_value) for raw_key, raw_value in records}
    compacted = sorted(newest.values(), key=records.index)
    loaded = shard(updates_per_snapshot=10)
    for raw_key, raw_value in compacted:
        loaded.replay(raw_key, raw_value)
    state = loaded.state(KEY)
    assert state is not None
    assert (state.leader_epoch, state.start_offset) == (4, 2)
    assert state.state_batches == (StateBatch(2, 4, AVAILABLE, 1), StateBatch(5, 6, ARCHIVED, 1))
    # A deletion leaves no update behind to bring the state back.
    deleted = s.delete(KEY, ctx(), 0)
    assert {decode_key(k).record_type for k, v in deleted.records if v is None} == {
        SHARE_SNAPSHOT,
        SHARE_UPDATE,
    }
