"""Consumer groups (KIP-848) through the shard and the shell's driver: what a
member is answered, how they sit beside classic groups, their offsets,
timeouts, a failed append and a reload."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.offset_fetch.v9.response import OffsetFetchResponse
from kio.static.primitive import i32

from kgroups.coordinator import CoordinatorConfig
from kgroups.coordinator.consumer import ConsumerGroupConfig

from .harness import Harness, subscription


def _join_two(h: Harness) -> tuple[str, str, int]:
    """Two members share topic t (4 partitions) and are stable; returns their
    ids and the epoch."""
    a = h.consumer_heartbeat("g", "a", 0)
    assert a.error_code is ErrorCode.none and h.owned(a) == {"t": [0, 1, 2, 3]}
    b = h.consumer_heartbeat("g", "b", 0)
    assert b.error_code is ErrorCode.none
    epoch = b.member_epoch
    # a gives up what b is to get; b then receives it.
    a2 = h.consumer_heartbeat("g", "a", a.member_epoch, owned={"t": [0, 1, 2, 3]})
    kept = h.owned(a2)["t"]
    assert len(kept) == 2
    a3 = h.consumer_heartbeat("g", "a", a2.member_epoch, owned={"t": kept})
    assert a3.member_epoch == epoch
    b2 = h.consumer_heartbeat("g", "b", epoch, owned={})
    assert sorted(h.owned(b2)["t"] + kept) == [0, 1, 2, 3]
    return "a", "b", epoch


def test_members_share_the_partitions_without_owning_one_twice() -> None:
    h = Harness()
    _join_two(h)
    described = h.consumer_describe("g")
    assert described.error_code is ErrorCode.none
    assert described.group_state == "Stable"
    owners: dict[int, str] = {}
    for member in described.members:
        for tp in member.assignment.topic_partitions:
            assert tp.topic_name == "t"
            for p in tp.partitions:
                assert p not in owners
                owners[p] = member.member_id
    assert sorted(owners) == [0, 1, 2, 3]


def test_a_first_heartbeat_without_a_subscription_is_an_invalid_request() -> None:
    h = Harness()
    response = h.consumer_heartbeat("g", "a", 0, topics=())
    assert response.error_code is ErrorCode.invalid_request
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found


def test_commits_and_fetches_carry_the_member_epoch() -> None:
    h = Harness()
    _, _, epoch = _join_two(h)
    ok = h.commit("g", {("t", 0): 5}, member_id="a", generation=epoch)
    assert ok == {("t", 0): ErrorCode.none}
    stale = h.commit("g", {("t", 0): 6}, member_id="a", generation=epoch - 1)
    assert stale == {("t", 0): ErrorCode.stale_member_epoch}
    unknown = h.commit("g", {("t", 0): 6}, member_id="nobody", generation=epoch)
    assert unknown == {("t", 0): ErrorCode.unknown_member_id}
    old_version = h.commit("g", {("t", 0): 6}, member_id="a", generation=epoch, version=8)
    assert old_version == {("t", 0): ErrorCode.unsupported_version}

    def fetch(member_epoch: int) -> OffsetFetchResponse:
        token = h.token("fetch")
        req = OffsetFetchRequestGroup(
            group_id="g",  # type: ignore[arg-type]
            member_id="a",
            member_epoch=i32(member_epoch),
            topics=(OffsetFetchRequestTopics(name="t", partition_indexes=(i32(0),)),),  # type: ignore[arg-type]
        )
        h.handle(h.shard.offset_fetch(req, h.ctx(token, 9), h.now))
        response: OffsetFetchResponse = h.reply(token)
        return response

    (group,) = fetch(epoch).groups
    assert group.error_code is ErrorCode.none
    assert group.topics[0].partitions[0].committed_offset == 5
    (group,) = fetch(epoch + 1).groups
    assert group.error_code is ErrorCode.stale_member_epoch


def test_a_silent_member_is_removed_after_the_session_timeout() -> None:
    h = Harness(consumer_config=ConsumerGroupConfig(session_timeout_ms=45_000))
    a = h.consumer_heartbeat("g", "a", 0)
    h.advance(44_000)
    assert h.consumer_heartbeat("g", "a", a.member_epoch).error_code is ErrorCode.none
    h.advance(46_000)
    assert h.consumer_describe("g").group_state == "Empty"
    assert h.consumer_heartbeat("g", "a", a.member_epoch).error_code is (
        ErrorCode.unknown_member_id
    )


def test_the_group_and_its_offsets_survive_a_reload() -> None:
    h = Harness()
    _, _, epoch = _join_two(h)
    h.commit("g", {("t", 1): 7}, member_id="b", generation=epoch)
    before = h.consumer_describe("g")
    h.restart()
    after = h.consumer_describe("g")
    assert after.group_epoch == before.group_epoch
    assert sorted(after.members, key=lambda m: m.member_id) == sorted(
        before.members, key=lambda m: m.member_id
    )
    assert h.fetch("g", {"t": [1]}) == {("t", 1): (7, -1, "")}
    # The members go on at their epochs.
    assert h.consumer_heartbeat("g", "a", epoch).error_code is ErrorCode.none


def test_a_failed_append_takes_the_join_back() -> None:
    h = Harness()
    h.fail_next_append = ErrorCode.kafka_storage_error
    failed = h.consumer_heartbeat("g", "a", 0)
    assert failed.error_code is not ErrorCode.none
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.list_groups().groups == ()
    again = h.consumer_heartbeat("g", "a", 0)
    assert again.error_code is ErrorCode.none and again.member_epoch == 1


def test_a_failed_append_takes_back_a_second_members_join() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    h.fail_next_append = ErrorCode.kafka_storage_error
    assert h.consumer_heartbeat("g", "b", 0).error_code is not ErrorCode.none
    described = h.consumer_describe("g")
    assert [m.member_id for m in described.members] == ["a"]
    assert described.group_epoch == a.member_epoch
    # The log and the state agree: a reload finds the same group.
    h.restart()
    assert h.consumer_describe("g").group_epoch == a.member_epoch


def test_a_classic_join_of_another_protocol_type_to_a_consumer_group_is_refused() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    refused = h.reply(h.join("g", protocol_type="connect"))
    assert refused.error_code is ErrorCode.inconsistent_group_protocol
    # Once empty, the group becomes a classic one.
    h.consumer_heartbeat("g", "a", -1)
    assert a.member_epoch > 0
    members, _ = h.form_group("g", 1)
    assert len(members) == 1
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    h.restart()
    assert h.describe("g").group_state == "Stable"
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found


def test_a_consumer_heartbeat_to_a_classic_group_is_refused() -> None:
    h = Harness()
    h.form_group("classic", 1, protocols=(("range", subscription("t")),))
    response = h.consumer_heartbeat("classic", "a", 0)
    assert response.error_code is ErrorCode.group_id_not_found


def test_group_apis_of_the_classic_protocol_see_consumer_groups_as_such() -> None:
    h = Harness()
    h.form_group("classic", 1, protocols=(("range", subscription("t")),))
    a = h.consumer_heartbeat("g", "a", 0)
    h.commit("g", {("t", 0): 1}, member_id="a", generation=a.member_epoch)
    listed = {(g.group_id, g.group_type, g.group_state) for g in h.list_groups().groups}
    assert listed == {("classic", "classic", "Stable"), ("g", "consumer", "Stable")}
    only = h.list_groups(types=("consumer",)).groups
    assert [g.group_id for g in only] == ["g"]
    assert h.describe("g").group_state == "Dead"


def test_delete_groups_deletes_an_empty_consumer_group_and_its_offsets() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    h.commit("g", {("t", 0): 3}, member_id="a", generation=a.member_epoch)
    assert h.delete_groups("g") == {"g": ErrorCode.non_empty_group}
    h.consumer_heartbeat("g", "a", -1)
    assert h.delete_groups("g") == {"g": ErrorCode.none}
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.fetch("g", {"t": [0]}) == {("t", 0): (-1, -1, "")}
    h.restart()
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.fetch("g", {"t": [0]}) == {("t", 0): (-1, -1, "")}


def test_offsets_of_subscribed_topics_do_not_expire_while_the_group_has_members() -> None:
    config = CoordinatorConfig(
        offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000
    )
    h = Harness(config)
    a = h.consumer_heartbeat("g", "a", 0)
    h.commit("g", {("t", 0): 3}, member_id="a", generation=a.member_epoch)
    for _ in range(5):
        h.advance(30_000)
        assert h.consumer_heartbeat("g", "a", a.member_epoch).error_code is ErrorCode.none
    assert h.fetch("g", {"t": [0]})[("t", 0)][0] == 3
    h.consumer_heartbeat("g", "a", -1)
    h.advance(80_000)
    assert h.fetch("g", {"t": [0]})[("t", 0)][0] == -1


def test_classic_member_requests_to_a_consumer_group_find_no_such_member() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    h.commit("g", {("t", 0): 1}, member_id="a", generation=a.member_epoch)
    assert h.heartbeat("g", "a", a.member_epoch) is ErrorCode.unknown_member_id
    assert h.shard.heartbeat_now("g", "a", None, a.member_epoch, h.now) in (
        None,
        ErrorCode.unknown_member_id,
    )
    sync = h.sync_response(h.sync("g", "a", a.member_epoch))
    assert sync.error_code is ErrorCode.unknown_member_id
    left = h.leave("g", ("a", None))
    assert [m.error_code for m in left.members] == [ErrorCode.unknown_member_id]
    # The consumer group is untouched.
    assert h.consumer_heartbeat("g", "a", a.member_epoch).error_code is ErrorCode.none
