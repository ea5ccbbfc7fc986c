"""Transactional offset commits (TxnOffsetCommit) on the shard: pending per
producer until the transaction's marker, as Kafka's group coordinator keeps them."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.schema.txn_offset_commit.v5.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.static.primitive import i16, i32, i64

from kgroups.coordinator.control_records import marker_commits
from kgroups.coordinator.result import EndMarker, ProducerBatch, Record
from kgroups.coordinator.txn_load import LoadedTransactions, replay_loaded
from kgroups.runtime.coordinator_driver import CoordinatorDriver

from .harness import COMMIT_TIMEOUT_MS, Harness
from .test_coordinator_static import static_group

PID = 4000
OTHER_PID = 4001


class TxnHarness(Harness):
    """Keeps the log as batches (with their producer) and restarts the way the
    broker loads a partition: newest record per key, transactions resolved."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches: list[tuple[ProducerBatch | None, list[Record]]] = []

    def _drive(self) -> None:
        appends = self.driver.appends
        while appends:
            append = appends.popleft()
            if self.fail_next_append is not None:
                error, self.fail_next_append = self.fail_next_append, None
                self.driver.failed(append, error, self.now)
                continue
            self.log.extend(append.records)
            self.batches.append((append.producer, list(append.records)))
            self.driver.durable(append, self.now)
        for token, response in self.driver.take_replies():
            self.replies[token] = response
            self.reply_count[token] = self.reply_count.get(token, 0) + 1

    def restart(self) -> None:
        self.shard = self.new_shard()
        self.driver = CoordinatorDriver(self.shard, COMMIT_TIMEOUT_MS, self.results.append)
        self.shard.begin_load()
        latest: dict[bytes, bytes | None] = {}
        transactions = LoadedTransactions(latest)
        for producer, records in self.batches:
            for key, value in records:
                if producer is None:
                    if key in transactions.keys:
                        transactions.plain(key, value)
                    latest.pop(key, None)
                    latest[key] = value
                elif producer.marker is not None:
                    commit = marker_commits(key)
                    assert commit is not None
                    transactions.marker(producer.producer_id, commit)
                else:
                    transactions.record(producer.producer_id, key, value)
        replay_loaded(self.shard.replay, latest, transactions.still_open())
        self.handle(self.shard.finish_load(self.now))

    def txn_commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        producer_id: int = PID,
        member_id: str = "",
        generation: int = -1,
        instance: str | None = None,
        metadata: str | None = "",
        version: int = 5,
    ) -> dict[tuple[str, int], ErrorCode]:
        token = self.token("txn commit")
        req = txn_request(group, offsets, producer_id, member_id, generation, instance, metadata)
        self.handle(self.shard.txn_offset_commit(req, self.ctx(token, version), self.now))
        response = self.reply(token)
        return {
            (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
        }

    def end_txn(self, commit: bool, producer_id: int = PID) -> ErrorCode:
        token = self.token("marker")
        self.handle(self.shard.complete_transaction(producer_id, 0, 7, commit, token, self.now))
        answer: ErrorCode = self.reply(token)
        return answer

    def stable_fetch(
        self, group: str, partitions: dict[str, list[int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, ErrorCode]]:
        token = self.token("fetch")
        req = OffsetFetchRequestGroup(
            group_id=group,  # type: ignore[arg-type]
            topics=None
            if partitions is None
            else tuple(
                OffsetFetchRequestTopics(
                    name=t,  # type: ignore[arg-type]
                    partition_indexes=tuple(i32(p) for p in ps),
                )
                for t, ps in partitions.items()
            ),
        )
        self.handle(self.shard.offset_fetch(req, self.ctx(token, 9), self.now, require_stable=True))
        response: OffsetFetchResponse = self.reply(token)
        (entry,) = response.groups
        return {
            (t.name, p.partition_index): (p.committed_offset, p.error_code)
            for t in entry.topics
            for p in t.partitions
        }


def txn_request(
    group: str,
    offsets: dict[tuple[str, int], int],
    producer_id: int = PID,
    member_id: str = "",
    generation: int = -1,
    instance: str | None = None,
    metadata: str | None = "",
) -> TxnOffsetCommitRequest:
    by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitRequestPartition(
                partition_index=i32(partition),
                committed_offset=i64(offset),
                committed_metadata=metadata,
            )
        )
    return TxnOffsetCommitRequest(
        transactional_id="tx",  # type: ignore[arg-type]
        group_id=group,  # type: ignore[arg-type]
        producer_id=producer_id,  # type: ignore[arg-type]
        producer_epoch=i16(0),
        generation_id=i32(generation),
        member_id=member_id,
        group_instance_id=instance,
        topics=tuple(
            TxnOffsetCommitRequestTopic(name=t, partitions=tuple(ps))  # type: ignore[arg-type]
            for t, ps in by_topic.items()
        ),
    )


def commit_request(group: str, offsets: dict[tuple[str, int], int]) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,  # type: ignore[arg-type]
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=topic,  # type: ignore[arg-type]
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(partition),
                        committed_offset=i64(offset),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    ),
                ),
            )
            for (topic, partition), offset in offsets.items()
        ),
    )


OK = ErrorCode.none


@pytest.fixture
def h() -> TxnHarness:
    return TxnHarness()


def offset(h: TxnHarness, group: str, topic: str, partition: int) -> int:
    return h.fetch(group, {topic: [partition]})[topic, partition][0]


def test_pending_offsets_are_not_committed_until_the_commit_marker(h: TxnHarness) -> None:
    assert h.txn_commit("g", {("t", 0): 10, ("t", 1): 11}) == {("t", 0): OK, ("t", 1): OK}
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (-1, -1, ""), ("t", 1): (-1, -1, "")}
    assert h.end_txn(commit=True) is OK
    assert offset(h, "g", "t", 0) == 10
    assert offset(h, "g", "t", 1) == 11


def test_the_transactional_records_go_in_a_batch_of_the_producer(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 1})
    h.txn_commit("g", {("t", 0): 10})
    h.end_txn(commit=True)
    producers = [producer for producer, _records in h.batches]
    assert producers == [None, ProducerBatch(PID, 0), ProducerBatch(PID, 0, EndMarker(True, 7))]
    marker = h.batches[2][1]
    assert marker == [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07")]


def test_abort_drops_the_pending_offsets(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 5})
    h.txn_commit("g", {("t", 0): 10})
    assert h.end_txn(commit=False) is OK
    assert offset(h, "g", "t", 0) == 5
    assert h.stable_fetch("g", {"t": [0]}) == {("t", 0): (5, OK)}


def test_markers_apply_only_their_producers_offsets(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    h.txn_commit("g", {("t", 1): 20}, producer_id=OTHER_PID)
    h.end_txn(commit=True, producer_id=OTHER_PID)
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (-1, -1, ""), ("t", 1): (20, -1, "")}
    assert h.stable_fetch("g", {"t": [0, 1]})["t", 0][1] is ErrorCode.unstable_offset_commit


def test_require_stable_answers_unstable_for_pending_partitions_only(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 3, ("t", 1): 4})
    h.txn_commit("g", {("t", 0): 10})
    assert h.stable_fetch("g", {"t": [0, 1]}) == {
        ("t", 0): (-1, ErrorCode.unstable_offset_commit),
        ("t", 1): (4, OK),
    }
    # Without require_stable: the last committed offset.
    assert offset(h, "g", "t", 0) == 3
    h.end_txn(commit=True)
    assert h.stable_fetch("g", {"t": [0, 1]}) == {("t", 0): (10, OK), ("t", 1): (4, OK)}


def test_a_later_plain_commit_wins_over_the_committed_transaction(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10, ("t", 1): 11})
    h.commit("g", {("t", 0): 50})
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == 50
    assert offset(h, "g", "t", 1) == 11


def test_a_plain_commit_before_the_transactional_one_loses(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 50})
    h.txn_commit("g", {("t", 0): 10})
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == 10


def test_offsets_committed_after_the_marker_was_written_wait_for_the_next(
    h: TxnHarness,
) -> None:
    h.txn_commit("g", {("t", 0): 10})
    h.held = []
    h.end_txn_token = h.token("marker")
    marker = h.shard.complete_transaction(PID, 0, 7, True, h.end_txn_token, h.now)
    h.held = None
    h.txn_commit("g", {("t", 1): 20})  # the next transaction, before the marker is durable
    h.handle(marker)
    assert h.reply(h.end_txn_token) is OK
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (10, -1, ""), ("t", 1): (-1, -1, "")}


def test_a_marker_that_fails_to_append_applies_nothing(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    h.fail_next_append = ErrorCode.kafka_storage_error
    assert h.end_txn(commit=True) is ErrorCode.kafka_storage_error
    assert offset(h, "g", "t", 0) == -1
    assert h.stable_fetch("g", {"t": [0]})["t", 0][1] is ErrorCode.unstable_offset_commit
    assert h.end_txn(commit=True) is OK  # the coordinator sends it again
    assert offset(h, "g", "t", 0) == 10


def test_a_refused_marker_takes_back_no_later_batch(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    # The marker, then another producer's offsets, appended in one turn; the
    # log refuses the marker (a stale coordinator epoch) and stores the offsets.
    h.held = []
    marker_token = h.token("marker")
    h.handle(h.shard.complete_transaction(PID, 0, 7, True, marker_token, h.now))
    txn_token = h.token("txn commit")
    request = txn_request("g", {("t", 1): 20}, producer_id=OTHER_PID)
    h.handle(h.shard.txn_offset_commit(request, h.ctx(txn_token, 5), h.now))
    marker, offsets = h.held
    h.held = None
    h.driver.submit(marker, h.now)
    h.driver.submit(offsets, h.now)
    refused, stored = h.driver.appends
    h.driver.appends.clear()
    h.driver.failed(refused, ErrorCode.transaction_coordinator_fenced, h.now)
    h.driver.durable(stored, h.now)
    h._drive()
    assert h.reply(marker_token) is ErrorCode.transaction_coordinator_fenced
    assert h.stable_fetch("g", {"t": [0, 1]}) == {
        ("t", 0): (-1, ErrorCode.unstable_offset_commit),
        ("t", 1): (-1, ErrorCode.unstable_offset_commit),
    }
    assert h.end_txn(commit=True, producer_id=OTHER_PID) is OK
    assert h.end_txn(commit=True) is OK
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (10, -1, ""), ("t", 1): (20, -1, "")}


def test_a_txn_commit_that_fails_to_append_leaves_nothing_pending(h: TxnHarness) -> None:
    h.fail_next_append = ErrorCode.kafka_storage_error
    errors = h.txn_commit("g", {("t", 0): 10})
    assert errors["t", 0] is not OK
    assert h.stable_fetch("g", {"t": [0]}) == {("t", 0): (-1, OK)}
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == -1


def test_a_members_txn_commit_that_fails_to_append_is_answered_with_the_error(
    h: TxnHarness,
) -> None:
    # A member's commit changes no group, only pending offsets: were its OK
    # to stand, the transaction would commit without them and its input
    # be processed again.
    members, generation = h.form_group("g", 1)
    h.fail_next_append = ErrorCode.not_leader_or_follower
    errors = h.txn_commit("g", {("t", 0): 10}, member_id=members[0], generation=generation)
    assert errors["t", 0] is not OK
    assert h.txn_commit("g", {("t", 0): 10}, member_id=members[0], generation=generation) == {
        ("t", 0): OK
    }
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == 10


def test_a_consumer_group_members_txn_commit_that_fails_to_append_is_answered_with_the_error(
    h: TxnHarness,
) -> None:
    epoch = h.consumer_heartbeat("cg", "m1", 0, topics=("t",)).member_epoch
    h.fail_next_append = ErrorCode.kafka_storage_error
    errors = h.txn_commit("cg", {("t", 0): 7}, member_id="m1", generation=epoch)
    assert errors["t", 0] is not OK
    h.end_txn(commit=True)
    assert offset(h, "cg", "t", 0) == -1  # nothing was pending: the client sends it again


def test_unknown_partition_and_big_metadata_are_refused_per_partition(h: TxnHarness) -> None:
    h.config = h.shard.config
    errors = h.txn_commit("g", {("t", 0): 1, ("nope", 0): 1, ("t", 9): 1})
    assert errors == {
        ("t", 0): OK,
        ("nope", 0): ErrorCode.unknown_topic_or_partition,
        ("t", 9): ErrorCode.unknown_topic_or_partition,
    }
    big = "x" * (h.shard.config.offset_metadata_max_bytes + 1)
    assert h.txn_commit("g", {("t", 1): 1}, metadata=big) == {
        ("t", 1): ErrorCode.offset_metadata_too_large
    }


def test_member_checks_of_a_classic_group(h: TxnHarness) -> None:
    members, generation = h.form_group("g", 2)
    member = members[0]
    assert h.txn_commit("g", {("t", 0): 1}, member_id=member, generation=generation) == {
        ("t", 0): OK
    }
    assert h.txn_commit("g", {("t", 0): 1}, member_id="ghost", generation=generation) == {
        ("t", 0): ErrorCode.unknown_member_id
    }
    assert h.txn_commit("g", {("t", 0): 1}, member_id=member, generation=generation + 1) == {
        ("t", 0): ErrorCode.illegal_generation
    }
    # v0-v2 carry neither member nor generation: taken whatever the group's state.
    assert h.txn_commit("g", {("t", 0): 1}, version=0) == {("t", 0): OK}


def test_a_static_member_with_a_stale_member_id_is_fenced(h: TxnHarness) -> None:
    ids, generation = static_group(h, "static-1")
    assert ids["static-1"] != "old-id"
    assert h.txn_commit(
        "g", {("t", 0): 1}, member_id="old-id", generation=generation, instance="static-1"
    ) == {("t", 0): ErrorCode.fenced_instance_id}


def test_a_new_group_is_created_only_for_a_commit_without_generation(h: TxnHarness) -> None:
    assert h.txn_commit("new", {("t", 0): 1}, generation=3, member_id="m") == {
        ("t", 0): ErrorCode.illegal_generation
    }
    assert h.txn_commit("new", {("t", 0): 1}) == {("t", 0): OK}
    h.end_txn(commit=True)
    assert offset(h, "new", "t", 0) == 1


def test_consumer_group_members_commit_with_their_member_epoch(h: TxnHarness) -> None:
    response = h.consumer_heartbeat("cg", "m1", 0, topics=("t",))
    epoch = response.member_epoch
    assert h.txn_commit("cg", {("t", 0): 7}, member_id="m1", generation=epoch) == {("t", 0): OK}
    # A stale member epoch is answered as a stale generation in a transaction.
    assert h.txn_commit("cg", {("t", 0): 7}, member_id="m1", generation=epoch + 5) == {
        ("t", 0): ErrorCode.illegal_generation
    }
    assert h.txn_commit("cg", {("t", 0): 7}, member_id="ghost", generation=epoch) == {
        ("t", 0): ErrorCode.unknown_member_id
    }
    h.end_txn(commit=True)
    assert offset(h, "cg", "t", 0) == 7


def test_replay_keeps_open_transactions_pending_and_applies_markers(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 1, ("t", 1): 2, ("t", 2): 3})
    h.txn_commit("g", {("t", 0): 10})
    h.end_txn(commit=True)
    h.txn_commit("g", {("t", 1): 20}, producer_id=OTHER_PID)
    h.end_txn(commit=False, producer_id=OTHER_PID)
    h.txn_commit("g", {("t", 2): 30})  # no marker yet
    h.restart()
    assert h.fetch("g", {"t": [0, 1, 2]}) == {
        ("t", 0): (10, -1, ""),
        ("t", 1): (2, -1, ""),
        ("t", 2): (3, -1, ""),
    }
    assert h.stable_fetch("g", {"t": [2]})["t", 2][1] is ErrorCode.unstable_offset_commit
    assert h.shard.pending_transactions() == [PID]
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 2) == 30


def test_replay_keeps_a_later_plain_commit_over_a_committed_transaction(
    h: TxnHarness,
) -> None:
    h.txn_commit("g", {("t", 0): 10, ("t", 1): 11})
    h.commit("g", {("t", 0): 50})
    h.end_txn(commit=True)
    h.txn_commit("g", {("t", 2): 12})
    h.commit("g", {("t", 2): 60})  # the transaction is still open
    h.restart()
    assert h.fetch("g", {"t": [0, 1, 2]}) == {
        ("t", 0): (50, -1, ""),
        ("t", 1): (11, -1, ""),
        ("t", 2): (60, -1, ""),
    }
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 2) == 60


def test_offset_delete_drops_pending_offsets_too(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 1})
    h.txn_commit("g", {("t", 0): 10, ("t", 1): 11})
    response = h.delete_offsets("g", {"t": [0, 1]})
    assert response.error_code is OK
    h.end_txn(commit=True)
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (-1, -1, ""), ("t", 1): (-1, -1, "")}


def test_delete_groups_drops_pending_offsets(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    assert h.delete_groups("g") == {"g": OK}
    h.end_txn(commit=True)
    assert h.fetch("g", {"t": [0]}) == {("t", 0): (-1, -1, "")}


def test_expiry_keeps_partitions_and_groups_with_pending_offsets(h: TxnHarness) -> None:
    h.commit("g", {("t", 0): 1, ("t", 1): 2})
    h.txn_commit("g", {("t", 0): 10})
    h.txn_commit("empty", {("t", 0): 5}, producer_id=OTHER_PID)
    h.advance(h.config.offsets_retention_ms + 2 * h.config.offsets_retention_check_interval_ms)
    assert h.fetch("g", {"t": [0, 1]}) == {("t", 0): (1, -1, ""), ("t", 1): (-1, -1, "")}
    assert h.shard.group("empty") is not None
    h.end_txn(commit=True, producer_id=OTHER_PID)
    assert offset(h, "empty", "t", 0) == 5


def test_an_older_transaction_committed_last_does_not_win(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    h.txn_commit("g", {("t", 0): 20}, producer_id=OTHER_PID)  # written later
    h.end_txn(commit=True, producer_id=OTHER_PID)
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == 20
    h.restart()
    assert offset(h, "g", "t", 0) == 20


def test_replay_of_an_older_open_transaction_after_a_newer_commit(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10})
    h.txn_commit("g", {("t", 0): 20}, producer_id=OTHER_PID)
    h.end_txn(commit=True, producer_id=OTHER_PID)
    h.restart()
    assert h.stable_fetch("g", {"t": [0]})["t", 0][1] is ErrorCode.unstable_offset_commit
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == 20


def test_a_deleted_topic_takes_its_pending_offsets(h: TxnHarness) -> None:
    h.txn_commit("g", {("t", 0): 10, ("u", 0): 11})
    h.handle(h.shard.on_topics_deleted(["t"], h.now))
    assert h.stable_fetch("g", {"t": [0], "u": [0]}) == {
        ("t", 0): (-1, OK),
        ("u", 0): (-1, ErrorCode.unstable_offset_commit),
    }
    h.end_txn(commit=True)
    assert h.fetch("g", {"t": [0], "u": [0]}) == {("t", 0): (-1, -1, ""), ("u", 0): (11, -1, "")}


def test_a_group_with_only_pending_offsets_exists_after_a_restart(h: TxnHarness) -> None:
    h.txn_commit("simple", {("t", 0): 10})
    h.restart()
    assert h.shard.group("simple") is not None


def test_a_failed_txn_commit_takes_later_calls_on_its_offsets_with_it(h: TxnHarness) -> None:
    txn = h.shard.txn_offset_commit(
        txn_request("g", {("t", 0): 10}), h.ctx(h.token("txn"), 5), h.now
    )
    plain = h.shard.offset_commit(  # marks the pending offset superseded
        commit_request("g", {("t", 0): 50}), h.ctx(h.token("commit"), 9), h.now
    )
    # Both batches fail, in order, as one failed write fails those after it.
    for result in (txn, plain):
        assert result.append_token is not None
        h.shard.append_failed(result.append_token, ErrorCode.kafka_storage_error, h.now)
    assert h.stable_fetch("g", {"t": [0]}) == {("t", 0): (-1, OK)}
    h.end_txn(commit=True)
    assert offset(h, "g", "t", 0) == -1


def test_members_txn_commits_that_fail_in_turn_are_both_answered_with_the_error(
    h: TxnHarness,
) -> None:
    # Two members' transactions send offsets; both writes fail, the first
    # reported first. Taking the first back takes the second's pending offsets
    # with it: the second must not then stand as a batch that stored nothing.
    members, generation = h.form_group("g", 2)
    first = h.shard.txn_offset_commit(
        txn_request("g", {("t", 0): 10}, member_id=members[0], generation=generation),
        h.ctx(h.token("first"), 5),
        h.now,
    )
    second = h.shard.txn_offset_commit(
        txn_request("g", {("t", 1): 20}, OTHER_PID, member_id=members[1], generation=generation),
        h.ctx(h.token("second"), 5),
        h.now,
    )
    answers = {}
    for result in (first, second):
        assert result.append_token is not None
        failed = h.shard.append_failed(result.append_token, ErrorCode.kafka_storage_error, h.now)
        for token, response in failed.replies:
            answers[token] = response
    assert len(answers) == 2, answers
    assert all(
        p.error_code is not OK for r in answers.values() for t in r.topics for p in t.partitions
    ), answers
    assert h.stable_fetch("g", {"t": [0, 1]}) == {("t", 0): (-1, OK), ("t", 1): (-1, OK)}
