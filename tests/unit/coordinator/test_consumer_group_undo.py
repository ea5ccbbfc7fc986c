"""Taking back a heartbeat whose records failed to append: the journal of
previous values, replayed in reverse, restores the group exactly."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupState, HeartbeatAnswer

from .consumer_group_harness import ALL_FOO_TOPICS, BAR, FOO, Harness, plain, snapshot


class UndoingHarness(Harness):
    """Every heartbeat is first made, taken back and checked, then made for real."""

    undone = 0

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> HeartbeatAnswer:
        table = self.coordinator.table
        group = table.get("g")
        before = None if group is None else snapshot(group)
        table.journal = []
        log_length = len(self.log)
        super().heartbeat(member_id, epoch, **fields)
        journal, table.journal = table.journal, None
        if len(self.log) > log_length:
            self.undone += 1
        del self.log[log_length:]
        table.undo(journal)
        after = table.get("g")
        assert (None if after is None else snapshot(after)) == before
        return super().heartbeat(member_id, epoch, **fields)


def test_every_kind_of_heartbeat_can_be_taken_back() -> None:
    h = UndoingHarness()
    h.join("a", instance_id="ia")  # creates the group
    h.join("b")
    h.owning("a", 1, ALL_FOO_TOPICS)  # a must revoke
    h.owning("a", 1, plain(h.group.target_of("a")))
    h.owning("b", 2, {})
    h.heartbeat("a", 2, subscribed_topic_names=["foo", "bar"])
    h.topics.put("bar", 5, BAR)
    h.owning("b", 3, plain(h.group.members["b"].assigned_partitions))
    h.heartbeat("a", -2, instance_id="ia")
    assert h.join("a2", instance_id="ia").error_code is ErrorCode.none  # replacement
    h.heartbeat("b", -1)
    h.heartbeat("a2", -1, instance_id="ia")
    assert h.group.state is ConsumerGroupState.EMPTY
    assert h.undone >= 10
    assert snapshot(h.replayed().groups["g"]) == snapshot(h.group)


def test_a_topic_change_seen_by_an_undone_heartbeat_is_seen_again() -> None:
    h = UndoingHarness()
    h.join("a")
    h.topics.put("foo", 8, FOO)
    answer = h.owning("a", 1, ALL_FOO_TOPICS)
    assert answer.member_epoch == 2
    assert plain(h.group.members["a"].assigned_partitions) == {FOO: set(range(8))}
