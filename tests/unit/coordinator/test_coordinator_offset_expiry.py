"""Offset retention (KIP-211), swept every offsets.retention.check.interval.ms."""

from __future__ import annotations

from kgroups.coordinator import CoordinatorConfig
from kgroups.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

from .harness import Harness, subscription

RETENTION = 120_000
CHECK = 10_000


def harness() -> Harness:
    return Harness(
        CoordinatorConfig(
            offsets_retention_ms=RETENTION,
            offsets_retention_check_interval_ms=CHECK,
            min_session_timeout_ms=1_000,
            max_session_timeout_ms=10 * RETENTION,
        )
    )


def tombstones(h: Harness) -> list[object]:
    return [decode_key(k) for k, v in h.log if v is None]


def test_a_simple_groups_offsets_expire_a_retention_after_their_commit() -> None:
    h = harness()
    h.commit("g", {("t", 0): 1})
    h.advance(60_000)
    h.commit("g", {("t", 1): 2})
    h.advance(RETENTION - 60_000)  # t-0 is due at the check at exactly its retention
    assert h.fetch("g") == {("t", 1): (2, -1, "")}
    assert tombstones(h) == [OffsetCommitKey("g", "t", 0)]
    h.advance(60_000)
    assert h.shard.group("g") is None  # never stored as metadata: no group tombstone
    assert tombstones(h) == [OffsetCommitKey("g", "t", 0), OffsetCommitKey("g", "t", 1)]


def test_an_empty_group_keeps_its_offsets_a_retention_after_emptying() -> None:
    h = harness()
    (a,), gen = h.form_group("g", 1)
    h.commit("g", {("t", 0): 1}, member_id=a, generation=gen)
    for _ in range(20):  # the member stays well past a retention
        h.advance(9_000)
        h.heartbeat("g", a, gen)
    h.leave("g", (a, None))
    h.advance(RETENTION - CHECK)
    assert h.fetch("g") == {("t", 0): (1, -1, "")}
    h.advance(2 * CHECK)
    assert h.fetch("g") == {}
    assert h.shard.group("g") is None
    assert tombstones(h) == [OffsetCommitKey("g", "t", 0), GroupMetadataKey("g")]


def test_a_stable_consumer_group_keeps_offsets_of_topics_it_consumes() -> None:
    h = harness()
    (a,), gen = h.form_group("g", 1, protocols=(("range", subscription("t")),))
    h.commit("g", {("t", 0): 1, ("u", 0): 2}, member_id=a, generation=gen)
    for _ in range(3 * RETENTION // 9_000):
        h.advance(9_000)
        h.heartbeat("g", a, gen)
    assert h.fetch("g") == {("t", 0): (1, -1, "")}


def test_an_empty_group_without_offsets_is_removed_at_the_next_sweep() -> None:
    h = harness()
    (a,), _ = h.form_group("g", 1)
    h.leave("g", (a, None))
    h.advance(CHECK)
    assert h.shard.group("g") is None
    assert tombstones(h) == [GroupMetadataKey("g")]


def test_a_rebalancing_group_keeps_everything() -> None:
    h = harness()
    (a, b), gen = h.form_group("g", 2, protocols=(("range", subscription("t")),))
    h.commit("g", {("u", 0): 2}, member_id=a, generation=gen)
    h.join("g", a, session=10 * RETENTION, rebalance=10 * RETENTION)  # b never rejoins
    for _ in range(2 * RETENTION // 9_000):
        h.advance(9_000)
        h.heartbeat("g", b, gen)
    assert h.fetch("g") == {("u", 0): (2, -1, "")}


def test_an_explicit_expiry_from_an_old_commit_is_honoured() -> None:
    h = harness()
    old = OffsetCommitValue(offset=3, metadata="", commit_timestamp=h.now, expire_timestamp=h.now)
    h.shard.replay(encode_offset_commit_key("g", "t", 0), encode_offset_commit_value(old))
    h.handle(h.shard.finish_load(h.now))
    assert h.fetch("g") == {("t", 0): (3, -1, "")}
    h.advance(CHECK)
    assert h.fetch("g") == {}


def test_a_v2_to_v4_retention_time_overrides_the_broker_retention() -> None:
    h = harness()
    h.commit("g", {("t", 0): 1}, version=4, retention_ms=30_000)
    h.commit("g", {("t", 1): 2}, version=4)  # -1: the broker's retention applies
    h.advance(40_000)
    assert h.fetch("g") == {("t", 1): (2, -1, "")}
    assert tombstones(h) == [OffsetCommitKey("g", "t", 0)]
    # The expiry time is stored (offset commit value v1), so a reload keeps it.
    values = [
        v for k, v in h.log if v is not None and decode_key(k) == OffsetCommitKey("g", "t", 0)
    ]
    assert values[0][:2] == b"\x00\x01"
