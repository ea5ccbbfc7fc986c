"""Loading: the log a live shard wrote rebuilds the same groups and offsets."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kgroups.coordinator import CoordinatorConfig, GroupCoordinatorShard, GroupState
from kgroups.coordinator.records import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

from .harness import Harness


def stored_view(shard: GroupCoordinatorShard) -> dict[str, Any]:
    """What the log can tell: groups that were stored, as they were stored."""
    view: dict[str, Any] = {}
    for group in shard._table:
        if group.generation_id == 0 and not group.offsets and not group.members:
            continue  # never written anywhere
        protocol = group.protocol_name
        view[group.group_id] = (
            group.state,
            group.generation_id,
            group.protocol_type,
            protocol,
            group.leader_id,
            tuple(
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(protocol) if protocol is not None else None,
                    m.assignment,
                )
                for m in group.members.values()
            ),
            dict(group.offsets),
            group.subscribed_topics,
        )
    return view


def reload(h: Harness, config: CoordinatorConfig | None = None) -> Harness:
    fresh = Harness(config or h.config, now=h.now)
    for key, value in h.log:
        fresh.shard.replay(key, value)
    fresh.handle(fresh.shard.finish_load(fresh.now))
    return fresh


def reload_compacted(h: Harness) -> Harness:
    """Replay only the newest record of each key, in the order of their last
    appearance: what the broker's loader does, and what a compacted log holds."""
    latest: dict[bytes, bytes | None] = {}
    for key, value in h.log:
        latest.pop(key, None)
        latest[key] = value
    fresh = Harness(h.config, now=h.now)
    for key, value in latest.items():
        fresh.shard.replay(key, value)
    fresh.handle(fresh.shard.finish_load(fresh.now))
    return fresh


def test_a_busy_shard_reloads_to_the_same_groups_and_offsets() -> None:
    h = Harness()
    (a, b, c), gen = h.form_group("g", 3, protocols=(("range", b"sub"), ("sticky", b"x")))
    h.commit("g", {("t", 0): 10, ("t", 1): 11}, member_id=a, generation=gen, metadata="m")
    h.leave("g", (c, None))
    ta, tb = h.join("g", a), h.join("g", b)
    h.sync("g", a, gen + 1, {a: b"A2", b: b"B2"})
    h.sync("g", b, gen + 1)
    h.commit("g", {("t", 0): 12}, member_id=b, generation=gen + 1, leader_epoch=3)
    h.commit("simple", {("u", 1): 5})
    (d,), _ = h.form_group("emptied", 1)
    h.commit("emptied", {("t", 2): 1}, member_id=d, generation=1)
    h.leave("emptied", (d, None))
    (e,), _ = h.form_group("deleted", 1)
    h.commit("deleted", {("t", 3): 1}, member_id=e, generation=1)
    h.leave("deleted", (e, None))
    h.delete_groups("deleted")
    h.commit("pruned", {("t", 0): 1, ("t", 1): 2})
    h.delete_offsets("pruned", {"t": [0]})
    static = h.join("static", instance="i1")
    h.advance(3000)
    sid = h.reply(static).member_id
    h.sync("static", sid, 1, {sid: b"S"}, instance="i1")
    h.join("static", instance="i1")  # restart: replaces the id, stored
    assert h.reply(ta).generation_id == h.reply(tb).generation_id

    loaded = reload(h)
    assert stored_view(loaded.shard) == stored_view(h.shard)
    assert set(stored_view(loaded.shard)) == {"g", "simple", "emptied", "pruned", "static"}


def test_loaded_members_get_fresh_sessions_and_keep_working() -> None:
    h = Harness()
    (a, b), gen = h.form_group("g", 2)
    h.advance(9_000)  # sessions nearly over when the coordinator moves
    loaded = reload(h)
    assert loaded.reply(loaded.sync("g", a, gen)).assignment == b"assignment-" + a.encode()
    loaded.advance(9_999)
    assert loaded.heartbeat("g", a, gen) is ErrorCode.none
    loaded.advance(1)  # b's session, started at loading, is over
    assert loaded.heartbeat("g", a, gen) is ErrorCode.rebalance_in_progress
    assert b not in [m.member_id for m in loaded.shard.group("g").members]  # type: ignore[union-attr]


def test_a_loaded_group_over_the_max_size_rebalances() -> None:
    h = Harness()
    (a, b, c), gen = h.form_group("g", 3)
    loaded = reload(h, CoordinatorConfig(max_size=2))
    group = loaded.shard.group("g")
    assert group is not None and group.state is GroupState.PREPARING_REBALANCE
    ta = loaded.join("g", a)
    tb = loaded.join("g", b)
    assert loaded.reply(loaded.join("g", c)).error_code is ErrorCode.group_max_size_reached
    assert loaded.reply(ta).generation_id == loaded.reply(tb).generation_id == gen + 1


def member(member_id: str, rebalance: int = 20_000) -> MemberMetadataValue:
    return MemberMetadataValue(member_id, None, "c", "h", rebalance, 10_000, b"s", b"a")


def group_record(generation: int, *members: MemberMetadataValue) -> tuple[bytes, bytes]:
    value = GroupMetadataValue(
        "consumer",
        generation,
        "range" if members else None,
        members[0].member_id if members else None,
        100,
        members,
    )
    return encode_group_metadata_key("g"), encode_group_metadata_value(value, version=3)


def test_later_records_replace_earlier_ones_whatever_the_states() -> None:
    shard = GroupCoordinatorShard(0, CoordinatorConfig(), partition_exists=lambda t, p: True)
    shard.replay(*group_record(1, member("a"), member("b")))
    shard.replay(*group_record(2))
    shard.replay(*group_record(3, member("c")))
    view = shard.group("g")
    assert view is not None
    assert (view.state, view.generation_id, view.leader_id) == (GroupState.STABLE, 3, "c")
    assert [m.member_id for m in view.members] == ["c"]
    shard.replay(*group_record(4))
    assert shard.group("g").state is GroupState.EMPTY  # type: ignore[union-attr]


def test_version_0_members_use_the_session_timeout_to_rebalance() -> None:
    shard = GroupCoordinatorShard(0, CoordinatorConfig(), partition_exists=lambda t, p: True)
    value = GroupMetadataValue("consumer", 1, "range", "a", -1, (member("a"),))
    shard.replay(encode_group_metadata_key("g"), encode_group_metadata_value(value, version=0))
    assert shard.group("g").members[0].rebalance_timeout_ms == 10_000  # type: ignore[union-attr]


def test_offsets_outlive_a_group_tombstone_as_a_simple_group() -> None:
    shard = GroupCoordinatorShard(0, CoordinatorConfig(), partition_exists=lambda t, p: True)
    offset = OffsetCommitValue(offset=7, metadata="", commit_timestamp=1)
    shard.replay(encode_offset_commit_key("g", "t", 0), encode_offset_commit_value(offset))
    shard.replay(*group_record(2, member("a")))
    shard.replay(encode_group_metadata_key("g"), None)
    view = shard.group("g")
    assert view is not None
    assert (view.state, view.generation_id, view.members) == (GroupState.EMPTY, 0, ())
    assert view.offsets[("t", 0)].offset == 7  # type: ignore[index]
    shard.replay(encode_offset_commit_key("g", "t", 0), None)
    assert shard.group("g") is None


def test_keys_of_other_coordinators_are_skipped() -> None:
    shard = GroupCoordinatorShard(0, CoordinatorConfig(), partition_exists=lambda t, p: True)
    shard.replay(b"\x00\x09\x00\x01g", b"whatever")
    shard.finish_load(0)
    assert list(shard.groups()) == []
