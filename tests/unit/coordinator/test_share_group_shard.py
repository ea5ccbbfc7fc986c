"""Share groups (KIP-932) through the shard and the shell's driver: one group
id names one kind of group, ListGroups/DescribeGroups/DeleteGroups answer
about share groups as Kafka 4.x, a failed append takes a join back, and a
restart rebuilds the groups from the log."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_describe.v1.response import DescribedGroup
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.share_group_heartbeat.v1.response import ShareGroupHeartbeatResponse
from kio.static.primitive import i32

from .harness import Harness


def share_heartbeat(
    h: Harness, group: str, member: str, epoch: int, topics: tuple[str, ...] | None = ("t",)
) -> ShareGroupHeartbeatResponse:
    token = h.token("share-heartbeat")
    req = ShareGroupHeartbeatRequest(
        group_id=group,  # type: ignore[arg-type]
        member_id=member,
        member_epoch=i32(epoch),
        subscribed_topic_names=topics,  # type: ignore[arg-type]
    )
    h.handle(h.shard.share_group_heartbeat(req, h.ctx(token, 1), h.now))
    response: ShareGroupHeartbeatResponse = h.reply(token)
    return response


def share_describe(h: Harness, group: str) -> DescribedGroup:
    token = h.token("share-describe")
    req = ShareGroupDescribeRequest(
        group_ids=(group,),  # type: ignore[arg-type]
        include_authorized_operations=False,
    )
    h.handle(h.shard.share_group_describe(req, h.ctx(token, 1), h.now))
    (described,) = h.reply(token).groups
    return described  # type: ignore[no-any-return]


def test_share_group_describe() -> None:
    h = Harness()
    a = share_heartbeat(h, "s", "a", 0)
    assert a.error_code is ErrorCode.none and a.member_epoch == 1
    described = share_describe(h, "s")
    assert described.error_code is ErrorCode.none
    assert (described.group_state, described.group_epoch, described.assignment_epoch) == (
        "Stable",
        1,
        1,
    )
    assert described.assignor_name == "simple"
    (member,) = described.members
    assert member.member_id == "a" and member.client_host == "/10.0.0.1"
    assert member.subscribed_topic_names == ("t",)
    (tp,) = member.assignment.topic_partitions
    assert tp.topic_name == "t" and tp.partitions == (0, 1, 2, 3)
    missing = share_describe(h, "nobody")
    assert missing.error_code is ErrorCode.group_id_not_found
    assert missing.error_message == "Group nobody not found."


def test_a_group_id_names_one_kind_of_group() -> None:
    h = Harness()
    h.form_group("classic", 1)
    h.consumer_heartbeat("consumer", "c", 0)
    share_heartbeat(h, "s", "a", 0)
    for other in ("classic", "consumer"):
        refused = share_heartbeat(h, other, "a", 0)
        assert refused.error_code is ErrorCode.group_id_not_found
        assert refused.error_message == f"Group {other} is not a share group."
        described = share_describe(h, other)
        assert described.error_code is ErrorCode.group_id_not_found
        assert described.error_message == f"Group {other} is not a share group."
    consumer = h.consumer_heartbeat("s", "c", 0)
    assert consumer.error_code is ErrorCode.group_id_not_found
    assert consumer.error_message == "Group s is not a consumer group."
    described_as_consumer = h.consumer_describe("s")
    assert described_as_consumer.error_code is ErrorCode.group_id_not_found
    assert described_as_consumer.error_message == "Group s is not a consumer group."
    joined = h.reply(h.join("s"))
    assert joined.error_code is ErrorCode.inconsistent_group_protocol
    assert joined.member_id == ""
    assert share_describe(h, "s").members[0].member_id == "a"


def test_list_groups_shows_share_groups() -> None:
    h = Harness()
    h.consumer_heartbeat("consumer", "c", 0)
    share_heartbeat(h, "s", "a", 0)
    listed = {g.group_id: g for g in h.list_groups().groups}
    assert (listed["s"].group_type, listed["s"].protocol_type, listed["s"].group_state) == (
        "share",
        "share",
        "Stable",
    )
    only_share = h.list_groups(types=("Share",)).groups
    assert [g.group_id for g in only_share] == ["s"]
    share_heartbeat(h, "s", "a", -1)
    assert [g.group_id for g in h.list_groups(states=("empty",)).groups] == ["s"]


def test_describe_groups_does_not_describe_a_share_group() -> None:
    h = Harness()
    share_heartbeat(h, "s", "a", 0)
    described = h.describe("s")  # v5: Dead, no error, as Kafka
    assert described.error_code is ErrorCode.none and described.group_state == "Dead"
    assert described.members == ()


def test_delete_groups_of_share_groups() -> None:
    h = Harness()
    a = share_heartbeat(h, "s", "a", 0)
    assert h.delete_groups("s") == {"s": ErrorCode.non_empty_group}
    share_heartbeat(h, "s", "a", a.member_epoch)
    share_heartbeat(h, "s", "a", -1)
    assert h.delete_groups("s") == {"s": ErrorCode.none}
    assert share_describe(h, "s").error_message == "Group s not found."
    h.restart()
    assert share_describe(h, "s").error_message == "Group s not found."


def test_a_failed_append_takes_the_join_back() -> None:
    h = Harness()
    share_heartbeat(h, "s", "a", 0)
    h.fail_next_append = ErrorCode.not_enough_replicas
    failed = share_heartbeat(h, "s", "b", 0)
    assert failed.error_code is ErrorCode.coordinator_not_available
    assert [m.member_id for m in share_describe(h, "s").members] == ["a"]
    assert share_describe(h, "s").group_epoch == 1


def test_a_restart_rebuilds_share_groups_and_their_sessions() -> None:
    h = Harness()
    a = share_heartbeat(h, "s", "a", 0)
    b = share_heartbeat(h, "s", "b", 0)
    h.restart()
    described = share_describe(h, "s")
    assert described.group_epoch == b.member_epoch == 2
    assert {m.member_id for m in described.members} == {"a", "b"}
    # Members keep their epochs across the restart.
    h.advance(20_000)
    again = share_heartbeat(h, "s", "a", a.member_epoch, topics=None)
    assert again.error_code is ErrorCode.none and again.member_epoch == 2
    # "b" stays silent: its session, started at load, ends it.
    h.advance(25_000)
    assert [m.member_id for m in share_describe(h, "s").members] == ["a"]


def test_a_share_group_keeps_no_committed_offsets() -> None:
    h = Harness()
    a = share_heartbeat(h, "s", "a", 0)
    assert h.commit("s", {("t", 0): 5}) == {("t", 0): ErrorCode.group_id_not_found}
    token = h.token("fetch")
    h.handle(
        h.shard.offset_fetch(
            OffsetFetchRequestGroup(group_id="s", topics=None),  # type: ignore[arg-type]
            h.ctx(token, 9),
            h.now,
        )
    )
    assert h.reply(token).groups[0].error_code is ErrorCode.group_id_not_found
    assert h.delete_offsets("s", {"t": [0]}).error_code is ErrorCode.group_id_not_found
    # Still a share group, which its member goes on heartbeating in.
    again = share_heartbeat(h, "s", "a", a.member_epoch, topics=None)
    assert again.error_code is ErrorCode.none
    assert [g.group_type for g in h.list_groups().groups] == ["share"]
