"""The coordinator actions a test injects through kgroups.testing: a forced
rebalance and a member's session ending now, for classic groups, consumer
groups, and consumer groups with classic members. Through the shard."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from .harness import Harness
from .test_group_migration import classic_group, upgrade


def test_a_forced_rebalance_tells_the_classic_members_to_rejoin() -> None:
    h = Harness()
    a, b, generation = classic_group(h)
    result = h.shard.force_rebalance("g", h.now)
    assert result is not None
    h.handle(result)
    assert h.describe("g").group_state == "PreparingRebalance"
    assert h.heartbeat("g", a, generation) is ErrorCode.rebalance_in_progress
    assert h.heartbeat("g", b, generation) is ErrorCode.rebalance_in_progress


def test_an_expired_classic_member_is_unknown_and_the_others_rebalance() -> None:
    h = Harness()
    a, b, generation = classic_group(h)
    result = h.shard.expire_member("g", a, h.now)
    assert result is not None
    h.handle(result)
    assert h.heartbeat("g", a, generation) is ErrorCode.unknown_member_id
    assert h.heartbeat("g", b, generation) is ErrorCode.rebalance_in_progress
    assert {m.member_id for m in h.describe("g").members} == {b}


def test_unknown_groups_and_members_are_refused() -> None:
    h = Harness()
    a, _b, _generation = classic_group(h)
    assert h.shard.force_rebalance("nobody", h.now) is None
    assert h.shard.expire_member("nobody", a, h.now) is None
    assert h.shard.expire_member("g", "not-a-member", h.now) is None


def test_a_forced_rebalance_moves_a_consumer_groups_epoch_on() -> None:
    h = Harness()
    joined = h.consumer_heartbeat("g", "c", 0)
    assert joined.error_code is ErrorCode.none
    result = h.shard.force_rebalance("g", h.now)
    assert result is not None
    h.handle(result)
    after = h.consumer_heartbeat("g", "c", joined.member_epoch)
    assert after.error_code is ErrorCode.none
    assert after.member_epoch > joined.member_epoch


def test_an_expired_consumer_member_is_fenced() -> None:
    h = Harness()
    joined = h.consumer_heartbeat("g", "c", 0)
    result = h.shard.expire_member("g", "c", h.now)
    assert result is not None
    h.handle(result)
    again = h.consumer_heartbeat("g", "c", joined.member_epoch)
    assert again.error_code is ErrorCode.unknown_member_id


def test_expiring_the_last_consumer_member_makes_the_group_classic_again() -> None:
    h = Harness()
    clients, _epoch, _owned = upgrade(h)
    result = h.shard.expire_member("g", "c", h.now)
    assert result is not None
    h.handle(result)
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    described = h.describe("g")
    assert {m.member_id for m in described.members} == {c.member_id for c in clients}
