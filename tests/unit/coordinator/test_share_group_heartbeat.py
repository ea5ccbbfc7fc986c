"""ShareGroupHeartbeat on the share groups of a shard (KIP-932), sans IO:
epochs, the simple assignor's shares, Kafka's errors, leaving, session
expiry, and loading by replay of the records written."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kgroups.clock import ManualClock
from kgroups.coordinator.consumer import TopicImage
from kgroups.coordinator.share import (
    ShareGroupConfig,
    ShareGroupCoordinator,
    ShareGroupState,
    ShareHeartbeatAnswer,
    ShareHeartbeatRequest,
)
from kgroups.coordinator.share.assignor import assign
from kgroups.coordinator.share.records import decode_key, is_share_group_key
from kgroups.coordinator.share.table import ShareGroupTable

TOPIC = "orders"


def hb(
    member: str, epoch: int, topics: tuple[str, ...] | None = (TOPIC,), group: str = "g"
) -> ShareHeartbeatRequest:
    return ShareHeartbeatRequest(group, member, epoch, None, topics, "client", "/127.0.0.1")


class Harness:
    def __init__(self, partitions: int = 2, **config: int) -> None:
        self.clock = ManualClock()
        self.topics = TopicImage()
        self.topic_id = self.topics.put(TOPIC, partitions).topic_id
        self.left: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.coordinator = ShareGroupCoordinator(ShareGroupConfig(**config), self)
        self.log: list[tuple[bytes, bytes | None]] = []

    def member_expired(self, group_id: str, member_id: str) -> None:
        self.left.append((group_id, member_id))

    def group_deleted(self, group_id: str) -> None:
        self.deleted.append(group_id)

    def beat(self, request: ShareHeartbeatRequest) -> ShareHeartbeatAnswer:
        records, answer = self.coordinator.heartbeat(request, self.topics, self.clock.now_ms())
        self.log.extend(records)
        return answer

    def partitions(self, member: str) -> set[int]:
        group = self.coordinator.table.groups["g"]
        return set(group.members[member].assigned_partitions.get(self.topic_id, ()))


def test_a_first_member_gets_every_partition_at_epoch_one() -> None:
    h = Harness()
    answer = h.beat(hb("m1", 0))
    assert answer.error_code is ErrorCode.none
    assert answer.member_epoch == 1
    assert answer.heartbeat_interval_ms == 5000
    assert answer.assignment == {h.topic_id: frozenset({0, 1})}
    assert [decode_key(k).record_type for k, _ in h.log] == [10, 11, 13, 12, 14]
    assert all(is_share_group_key(k) for k, _ in h.log)
    assert h.coordinator.table.groups["g"].state is ShareGroupState.STABLE


def test_three_members_on_two_partitions_share_them() -> None:
    h = Harness()
    first = h.beat(hb("m1", 0))
    h.beat(hb("m2", 0))
    h.beat(hb("m3", 0))
    h.beat(hb("m1", first.member_epoch))
    group = h.coordinator.table.groups["g"]
    assert group.group_epoch == 3
    holders = {p: [m for m in group.members if p in h.partitions(m)] for p in (0, 1)}
    # ceil(3 / 2) = 2 members on each partition; one member has both.
    assert sorted(len(ms) for ms in holders.values()) == [2, 2]
    assert sorted(len(h.partitions(m)) for m in group.members) == [1, 1, 2]


def test_a_steady_heartbeat_writes_nothing_and_sends_no_assignment() -> None:
    h = Harness()
    epoch = h.beat(hb("m1", 0)).member_epoch
    h.log.clear()
    answer = h.beat(hb("m1", epoch, topics=None))
    assert h.log == []
    assert answer.member_epoch == epoch and answer.assignment is None


def test_kafkas_errors() -> None:
    h = Harness()
    assert h.beat(hb("", 0)).error_code is ErrorCode.invalid_request
    missing = h.beat(hb("m1", 0, topics=None))
    assert missing.error_code is ErrorCode.invalid_request
    assert missing.error_message == "SubscribedTopicNames must be set in first request."
    assert h.beat(hb("m1", -2)).error_code is ErrorCode.invalid_request
    absent = h.beat(hb("m1", 3))
    assert absent.error_code is ErrorCode.group_id_not_found
    assert absent.error_message == "Share group g not found."
    h.beat(hb("m1", 0))
    assert h.beat(hb("m2", 1)).error_code is ErrorCode.unknown_member_id
    assert h.beat(hb("m1", 7)).error_code is ErrorCode.fenced_member_epoch
    assert h.beat(hb("m9", -1)).error_code is ErrorCode.unknown_member_id


def test_group_max_size() -> None:
    h = Harness(max_size=2)
    h.beat(hb("m1", 0))
    h.beat(hb("m2", 0))
    assert h.beat(hb("m3", 0)).error_code is ErrorCode.group_max_size_reached


def test_leaving_hands_partitions_to_the_others() -> None:
    h = Harness()
    a = h.beat(hb("m1", 0))
    b = h.beat(hb("m2", 0))
    a = h.beat(hb("m1", a.member_epoch))
    assert h.partitions("m1") | h.partitions("m2") == {0, 1}
    assert len(h.partitions("m1")) == 1
    left = h.beat(hb("m2", -1))
    assert left.member_epoch == -1 and left.error_code is ErrorCode.none
    assert h.left == []  # its share session closes itself, acknowledging first
    a = h.beat(hb("m1", a.member_epoch))
    assert a.assignment == {h.topic_id: frozenset({0, 1})}
    assert b.member_epoch < a.member_epoch


def test_an_expired_session_removes_the_member() -> None:
    h = Harness()
    h.beat(hb("m1", 0))
    h.clock.advance(44_999)
    assert h.coordinator.expire(h.clock.now_ms(), h.topics) == []
    h.clock.advance(1)
    records = h.coordinator.expire(h.clock.now_ms(), h.topics)
    assert records
    assert h.left == [("g", "m1")]
    group = h.coordinator.table.groups["g"]
    assert group.state is ShareGroupState.EMPTY


def test_the_session_timeout_is_configurable() -> None:
    h = Harness(session_timeout_ms=1000)
    h.beat(hb("m1", 0))
    h.clock.advance(1000)
    assert h.coordinator.expire(h.clock.now_ms(), h.topics)


def test_new_partitions_are_assigned_at_the_next_heartbeat() -> None:
    h = Harness(partitions=1)
    epoch = h.beat(hb("m1", 0)).member_epoch
    h.topics.put(TOPIC, 3)
    answer = h.beat(hb("m1", epoch, topics=None))
    assert answer.member_epoch == epoch + 1
    assert answer.assignment == {h.topic_id: frozenset({0, 1, 2})}


def test_replaying_the_records_rebuilds_the_groups() -> None:
    h = Harness()
    a = h.beat(hb("m1", 0))
    h.beat(hb("m2", 0))
    h.beat(hb("m1", a.member_epoch))
    h.beat(hb("m2", -1))
    loaded = ShareGroupTable()
    for key, value in h.log:
        loaded.replay_bytes(key, value)
    live = h.coordinator.table.groups["g"]
    again = loaded.groups["g"]
    assert (again.group_epoch, again.assignment_epoch, again.metadata_hash) == (
        live.group_epoch,
        live.assignment_epoch,
        live.metadata_hash,
    )
    assert again.members.keys() == live.members.keys() == {"m1"}
    assert dict(again.members["m1"].assigned_partitions) == dict(
        live.members["m1"].assigned_partitions
    )
    assert again.target_assignment.keys() == live.target_assignment.keys()


def test_undo_takes_a_join_back() -> None:
    h = Harness()
    h.beat(hb("m1", 0))
    table = h.coordinator.table
    table.journal = journal = []
    h.beat(hb("m2", 0))
    table.journal = None
    table.undo(journal)
    group = table.groups["g"]
    assert group.members.keys() == {"m1"} and group.group_epoch == 1
    assert group.target_assignment.keys() == {"m1"}


def test_deleting_an_empty_group() -> None:
    h = Harness()
    h.beat(hb("m1", 0))
    h.beat(hb("m1", -1))
    records = h.coordinator.delete_group("g")
    assert "g" not in h.coordinator.table.groups
    assert h.deleted == ["g"]  # its share partitions go too
    assert all(value is None for _, value in records)


def test_the_simple_assignor() -> None:
    t = uuid.uuid4()
    topics = {"t": (t, 4)}
    two = assign({"a": frozenset({"t"}), "b": frozenset({"t"})}, {}, topics)
    assert sorted(len(two[m][t]) for m in two) == [2, 2]
    assert two["a"][t] | two["b"][t] == {0, 1, 2, 3}
    # Sticky: a third member takes partitions from both without moving the rest.
    three = assign({m: frozenset({"t"}) for m in "abc"}, two, topics)
    assert sorted(len(three[m].get(t, ())) for m in three) == [1, 1, 2]
    assert three["a"][t] <= two["a"][t] and three["b"][t] <= two["b"][t]
    # More members than partitions: every member gets one, shared.
    five = assign({m: frozenset({"t"}) for m in "abcde"}, {}, {"t": (t, 2)})
    assert all(len(five[m][t]) >= 1 for m in five)
    # Members subscribed to a missing topic get nothing.
    assert assign({"a": frozenset({"x"})}, {}, topics) == {"a": {}}


def test_a_member_may_come_back_with_its_previous_epoch() -> None:
    h = Harness()
    first = h.beat(hb("m1", 0))
    h.beat(hb("m2", 0))
    h.beat(hb("m3", 0))
    moved = h.beat(hb("m1", first.member_epoch, topics=None))
    assert (first.member_epoch, moved.member_epoch) == (1, 3)
    # The answer that moved it on was lost: its previous epoch still counts.
    again = h.beat(hb("m1", first.member_epoch, topics=None))
    assert again.error_code is ErrorCode.none and again.member_epoch == moved.member_epoch
    stale = h.beat(hb("m1", 2, topics=None))
    assert stale.error_code is ErrorCode.fenced_member_epoch
    assert "smaller member epoch" in (stale.error_message or "")
