import io

from kio.schema.join_group.v0 import JoinGroupRequest as JoinGroupRequestV0
from kio.schema.join_group.v0.request import JoinGroupRequestProtocol as ProtocolV0
from kio.schema.join_group.v2 import JoinGroupResponse as JoinGroupResponseV2
from kio.schema.join_group.v9 import JoinGroupRequest, JoinGroupResponse
from kio.schema.join_group.v9.response import JoinGroupResponseMember
from kio.schema.leave_group.v2 import LeaveGroupRequest as LeaveGroupRequestV2
from kio.schema.leave_group.v5.response import MemberResponse
from kio.schema.types import GroupId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.versions import join_protocol_name, leave_error, leave_request, upgrade

UNKNOWN = ErrorCode.unknown_member_id


def test_upgrade_fills_fields_the_old_version_lacks() -> None:
    old = JoinGroupRequestV0(
        group_id=GroupId("g"),
        session_timeout=i32Timedelta.parse(__import__("datetime").timedelta(seconds=10)),
        member_id="",
        protocol_type="consumer",
        protocols=(ProtocolV0(name="range", metadata=b"m"),),
    )
    new = upgrade(old, JoinGroupRequest)
    assert isinstance(new, JoinGroupRequest)
    assert new.group_id == "g" and new.member_id == ""
    assert new.group_instance_id is None and new.reason is None
    # v0 has no rebalance timeout: the schema default (-1 ms) stands in.
    assert new.rebalance_timeout.total_seconds() == -0.001
    assert [(p.name, p.metadata) for p in new.protocols] == [("range", b"m")]


def test_newest_response_serialises_as_an_older_version() -> None:
    response = JoinGroupResponse(
        throttle_time=i32Timedelta.parse(__import__("datetime").timedelta(0)),
        error_code=ErrorCode.none,
        generation_id=i32(3),
        protocol_type="consumer",
        protocol_name="range",
        leader="a",
        skip_assignment=False,
        member_id="a",
        members=(JoinGroupResponseMember(member_id="a", group_instance_id=None, metadata=b"x"),),
    )
    buf = io.BytesIO()
    apis.codec(apis.JOIN_GROUP, 2).write_response(buf, response)
    decoded, _ = entity_reader(JoinGroupResponseV2)(buf.getvalue(), 0)
    assert decoded.generation_id == 3 and decoded.leader == "a"
    assert [m.member_id for m in decoded.members] == ["a"]


def test_every_supported_version_has_a_codec() -> None:
    for r in apis.SUPPORTED.values():
        for v in range(r.min_version, r.max_version + 1):
            c = apis.codec(r.key, v)
            assert c.request_type.__version__ == v
            entity_writer(c.response_type)


def test_repeating_responses_are_encoded_once_and_stay_correct() -> None:
    from kio.schema.heartbeat.v4 import HeartbeatResponse

    c = apis.codec(apis.HEARTBEAT, 4)
    ok = HeartbeatResponse(
        throttle_time=i32Timedelta.parse(__import__("datetime").timedelta(0)),
        error_code=ErrorCode.none,
    )
    rebalancing = HeartbeatResponse(
        throttle_time=i32Timedelta.parse(__import__("datetime").timedelta(0)),
        error_code=ErrorCode.rebalance_in_progress,
    )
    first = c.encode_response(ok)
    assert c.encode_response(ok) is first  # served from the cache
    assert c.encode_response(rebalancing) != first
    assert c.encode_response(rebalancing)[4:6] == b"\x00\x1b"  # error code 27


def test_a_stable_consumer_group_member_gets_its_heartbeat_answer_encoded_once() -> None:
    import datetime
    import uuid

    from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatResponse
    from kio.schema.consumer_group_heartbeat.v0.response import Assignment, TopicPartitions

    c = apis.codec(apis.CONSUMER_GROUP_HEARTBEAT, 0)

    def answer(epoch: int, assignment: Assignment | None = None) -> object:
        return ConsumerGroupHeartbeatResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            error_code=ErrorCode.none,
            member_id="m-1",
            member_epoch=i32(epoch),
            heartbeat_interval=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            assignment=assignment,
        )

    steady = c.encode_response(answer(3))
    assert c.encode_response(answer(3)) is steady  # served from the cache
    assert c.encode_response(answer(4)) != steady
    given = Assignment(
        topic_partitions=(TopicPartitions(topic_id=uuid.UUID(int=1), partitions=(i32(0),)),)
    )
    buf = io.BytesIO()
    entity_writer(c.response_type)(buf, answer(4, given))
    assert c.encode_response(answer(4, given)) == buf.getvalue()


def test_join_group_protocol_name_is_null_only_from_v7() -> None:
    assert join_protocol_name(6, None) == ""
    assert join_protocol_name(7, None) is None
    assert join_protocol_name(7, "") is None
    assert join_protocol_name(5, "range") == join_protocol_name(9, "range") == "range"


def test_old_leave_group_names_one_member_and_reads_one_error() -> None:
    old = LeaveGroupRequestV2(group_id=GroupId("g"), member_id="m-1")
    request = leave_request(2, old)
    assert request.group_id == "g"
    assert [(m.member_id, m.group_instance_id) for m in request.members] == [("m-1", None)]
    failed = (MemberResponse(member_id="m-1", group_instance_id=None, error_code=UNKNOWN),)
    # Before v3 the member's failure is the answer's error; from v3 it stays per member.
    assert leave_error(2, ErrorCode.none, failed) == UNKNOWN
    assert leave_error(3, ErrorCode.none, failed) == ErrorCode.none
    assert leave_error(2, ErrorCode.not_coordinator, failed) == ErrorCode.not_coordinator
