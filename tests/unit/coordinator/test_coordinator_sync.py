"""SyncGroup: validation, parking followers, storing the leader's assignment."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState
from kgroups.coordinator.records import (
    GroupMetadataKey,
    decode_group_metadata_value,
    decode_key,
)

from .harness import Harness


def completing(h: Harness, size: int = 2) -> list[str]:
    joins = [h.join_new("g") for _ in range(size)]
    h.advance(6000)
    assert h.shard.group("g").state is GroupState.COMPLETING_REBALANCE  # type: ignore[union-attr]
    return [m for m, _ in joins]


def test_v5_requires_protocol_type_and_name() -> None:
    h = Harness()
    a, b = completing(h)
    for ptype, pname in ((None, "range"), ("consumer", None)):
        token = h.sync("g", a, 1, protocol_type=ptype, protocol_name=pname)
        assert h.reply(token).error_code is ErrorCode.inconsistent_group_protocol
    older = h.sync("g", b, 1, protocol_type=None, protocol_name=None, version=4)
    assert h.reply(older) is None  # parked: fine before v5


def test_protocol_type_and_name_must_match_the_group() -> None:
    h = Harness()
    a, _ = completing(h)
    wrong_type = h.sync("g", a, 1, protocol_type="connect")
    wrong_name = h.sync("g", a, 1, protocol_name="roundrobin")
    assert h.reply(wrong_type).error_code is ErrorCode.inconsistent_group_protocol
    assert h.reply(wrong_name).error_code is ErrorCode.inconsistent_group_protocol


def test_unknown_group_member_generation_and_id() -> None:
    h = Harness()
    a, _ = completing(h)
    assert h.reply(h.sync("nope", a, 1)).error_code is ErrorCode.unknown_member_id
    assert h.reply(h.sync("g", "stranger", 1)).error_code is ErrorCode.unknown_member_id
    assert h.reply(h.sync("g", a, 2)).error_code is ErrorCode.illegal_generation
    assert h.reply(h.sync("", a, 1)).error_code is ErrorCode.invalid_group_id


def test_followers_wait_for_the_leader_then_all_get_their_assignment() -> None:
    h = Harness()
    a, b, c = completing(h, 3)
    tb = h.sync("g", b, 1)
    assert h.reply(tb) is None
    assert h.heartbeat("g", b, 1) is ErrorCode.none
    ta = h.sync("g", a, 1, {a: b"A", b: b"B", c: b"C"})
    result = h.results[-1]
    assert len(result.records) == 1  # the group, stored once
    assert {token for token, _ in result.replies} == {ta, tb}  # sent once it is stored
    assert h.reply(ta).assignment == b"A"
    assert h.reply(tb).assignment == b"B"
    assert h.reply(tb).protocol_name == "range"
    assert h.shard.group("g").state is GroupState.STABLE  # type: ignore[union-attr]
    tc = h.sync("g", c, 1)  # after the leader: answered at once
    assert h.reply(tc).assignment == b"C"


def test_the_stored_record_holds_every_member_and_assignment() -> None:
    h = Harness()
    a, b = completing(h)
    h.sync("g", a, 1, {a: b"A", "not-a-member": b"X"})
    key, value = h.log[-1]
    assert decode_key(key) == GroupMetadataKey("g")
    assert value is not None
    stored = decode_group_metadata_value(value)
    assert (stored.generation, stored.protocol, stored.leader) == (1, "range", a)
    assert [(m.member_id, m.assignment) for m in stored.members] == [(a, b"A"), (b, b"")]


def test_members_left_out_by_the_leader_get_an_empty_assignment() -> None:
    h = Harness()
    a, b = completing(h)
    tb = h.sync("g", b, 1)
    h.sync("g", a, 1, {a: b"A"})
    assert h.reply(tb).error_code is ErrorCode.none
    assert h.reply(tb).assignment == b""


def test_a_repeated_sync_answers_the_older_request() -> None:
    h = Harness()
    a, b = completing(h)
    first = h.sync("g", b, 1)
    second = h.sync("g", b, 1)
    assert h.reply(first).error_code is ErrorCode.rebalance_in_progress
    h.sync("g", a, 1, {b: b"B"})
    assert h.reply(second).assignment == b"B"
    assert h.reply_count[second] == 1
