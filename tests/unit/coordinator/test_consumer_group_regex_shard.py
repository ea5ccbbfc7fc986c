"""Regular-expression subscriptions through the shard: the answer on the wire,
a reload, and a failed append."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupConfig

from .harness import Harness


def _topics(h: Harness) -> dict[str, int]:
    h.topics = {"t": 4, "t-2": 2, "u": 2}
    for name, count in h.topics.items():
        if name not in h.topic_image.topics:
            h.topic_image.put(name, count)
    return h.topics


def _members(described: Any) -> dict[str, Any]:
    """What describe says of each member, regardless of the topics' order."""
    return {
        m.member_id: (
            m.member_epoch,
            m.subscribed_topic_regex,
            {tp.topic_name: sorted(tp.partitions) for tp in m.assignment.topic_partitions},
            {tp.topic_name: sorted(tp.partitions) for tp in m.target_assignment.topic_partitions},
        )
        for m in described.members
    }


def test_a_regex_member_is_assigned_the_matching_topics_and_keeps_them_after_a_reload() -> None:
    h = Harness(partitions={"t": 4, "u": 2})
    a = h.consumer_heartbeat("g", "a", 0, regex="t.*")
    assert a.error_code is ErrorCode.none
    assert h.owned(a) == {"t": [0, 1, 2, 3]}
    epoch = a.member_epoch

    # A topic created later is picked up once the minimum interval is over.
    _topics(h)
    h.advance(11_000)
    a = h.consumer_heartbeat("g", "a", epoch, owned={"t": [0, 1, 2, 3]})
    assert a.member_epoch == epoch + 1
    assert h.owned(a) == {"t": [0, 1, 2, 3], "t-2": [0, 1]}
    described = h.consumer_describe("g")

    h.restart()
    again = h.consumer_describe("g")
    assert again.group_epoch == described.group_epoch
    assert _members(again) == _members(described)
    # Past the interval the reloaded group resolves the regex again and
    # finds the same topics: no new epoch, the member carries on.
    h.advance(11_000)
    a = h.consumer_heartbeat("g", "a", epoch + 1, owned={"t": [0, 1, 2, 3], "t-2": [0, 1]})
    assert a.error_code is ErrorCode.none
    assert a.member_epoch == epoch + 1
    assert h.consumer_describe("g").group_epoch == described.group_epoch


def test_an_invalid_regex_is_answered_on_the_wire_and_leaves_no_group() -> None:
    h = Harness()
    answer = h.consumer_heartbeat("g", "a", 0, regex="t[")
    assert answer.error_code is ErrorCode.invalid_regular_expression
    assert answer.error_message is not None and "t[" in answer.error_message
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.log == []


def test_a_failed_append_takes_the_resolution_back() -> None:
    h = Harness(consumer_config=ConsumerGroupConfig())
    a = h.consumer_heartbeat("g", "a", 0, regex="t.*")
    _topics(h)
    h.advance(11_000)
    h.fail_next_append = ErrorCode.kafka_storage_error
    failed = h.consumer_heartbeat("g", "a", a.member_epoch, owned={"t": [0, 1, 2, 3]})
    assert failed.error_code is not ErrorCode.none
    assert h.consumer_describe("g").group_epoch == a.member_epoch
    # Taken back, the resolution is done again by the next heartbeat.
    again = h.consumer_heartbeat("g", "a", a.member_epoch, owned={"t": [0, 1, 2, 3]})
    assert again.member_epoch == a.member_epoch + 1
    assert h.owned(again) == {"t": [0, 1, 2, 3], "t-2": [0, 1]}
