"""Classic and consumer groups side by side (KIP-848 migration): a classic
group becomes a consumer group when a consumer-protocol member joins, its
classic members keep working inside it, and it becomes classic again when
the last consumer-protocol member leaves. On virtual time, through the shard."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kgroups.assignors.protocol import (
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from kgroups.coordinator import CoordinatorConfig
from kgroups.coordinator.consumer import ConsumerGroupConfig

from .harness import REBALANCE_MS, SESSION_MS, Harness


def meta(owned: list[int] | None = None, *topics: str) -> bytes:
    """A consumer protocol (v1) subscription to ``topics`` (default t) owning
    partitions of t."""
    return encode_subscription(
        Subscription(
            topics=list(topics or ("t",)),
            owned_partitions=[TopicPartition("t", p) for p in owned or []],
        ),
        version=1,
    )


def classic_group(h: Harness, group: str = "g") -> tuple[str, str, int]:
    """Two classic members a and b: a owns t-0,1 and b t-2,3. Their ids and
    the generation."""
    protocols = (("range", meta()),)
    a, join_a = h.join_new(group, protocols=protocols)
    b, join_b = h.join_new(group, protocols=protocols)
    for _ in range(10):  # the initial delay extends while members arrive
        if h.reply(join_a) is not None:
            break
        h.advance(h.config.initial_rebalance_delay_ms)
    joined = h.reply(join_a)
    assert joined is not None and h.reply(join_b) is not None
    generation = joined.generation_id
    leader = joined.leader
    assignments = {
        a: encode_assignment(Assignment([TopicPartition("t", 0), TopicPartition("t", 1)])),
        b: encode_assignment(Assignment([TopicPartition("t", 2), TopicPartition("t", 3)])),
    }
    h.sync(group, leader, generation, assignments)
    h.sync(group, a if leader == b else b, generation)
    assert h.describe(group).group_state == "Stable"
    return a, b, generation


class ClassicClient:
    """A classic consumer inside the group: rejoins when told, keeps what it
    is assigned (a cooperative consumer reports it owns it)."""

    def __init__(self, h: Harness, member_id: str, generation: int, owned: list[int]) -> None:
        self.h, self.member_id, self.generation, self.owned = h, member_id, generation, owned

    def poll(self) -> ErrorCode:
        h = self.h
        error = h.heartbeat("g", self.member_id, self.generation)
        if error is not ErrorCode.rebalance_in_progress:
            return error
        joined = h.reply(h.join("g", self.member_id, protocols=(("range", meta(self.owned)),)))
        assert joined.error_code is ErrorCode.none, joined
        assert joined.protocol_type == "consumer" and joined.protocol_name == "range"
        self.generation = joined.generation_id
        synced = h.sync_response(h.sync("g", self.member_id, self.generation))
        assert synced.error_code is ErrorCode.none, synced
        self.owned = sorted(tp.partition for tp in decode_assignment(synced.assignment).partitions)
        return ErrorCode.rebalance_in_progress


def owned_by_consumer(
    h: Harness, member_id: str, epoch: int, owned: list[int]
) -> tuple[int, list[int]]:
    response = h.consumer_heartbeat("g", member_id, epoch, owned={"t": owned})
    assert response.error_code is ErrorCode.none, response
    if response.assignment is not None:
        owned = h.owned(response).get("t", [])
    return response.member_epoch, owned


def upgrade(h: Harness) -> tuple[list[ClassicClient], int, list[int]]:
    """Classic a and b, then consumer member c joins: the group converts and
    settles with the three sharing t; never is a partition held twice."""
    a, b, generation = classic_group(h)
    c = h.consumer_heartbeat("g", "c", 0)
    assert c.error_code is ErrorCode.none, c
    assert c.member_epoch == generation + 1
    assert h.owned(c) == {}  # its partitions are still a's or b's
    clients = [ClassicClient(h, a, generation, [0, 1]), ClassicClient(h, b, generation, [2, 3])]
    epoch, c_owned = c.member_epoch, []
    for _ in range(10):
        for client in clients:
            client.poll()
        epoch, c_owned = owned_by_consumer(h, "c", epoch, c_owned)
        held = [p for client in clients for p in client.owned] + c_owned
        assert len(held) == len(set(held)), held
        if sorted(held) == [0, 1, 2, 3] and all(
            h.heartbeat("g", cl.member_id, cl.generation) is ErrorCode.none for cl in clients
        ):
            break
    else:
        raise AssertionError("the group did not settle")
    assert all(client.owned for client in clients) and c_owned
    return clients, epoch, c_owned


def test_a_consumer_member_joining_a_classic_group_converts_it() -> None:
    h = Harness()
    clients, _epoch, _ = upgrade(h)
    described = h.consumer_describe("g")
    assert described.error_code is ErrorCode.none
    assert described.group_state == "Stable"
    types = {m.member_id: m.member_type for m in described.members}
    assert types == {"c": 1} | {c.member_id: 0 for c in clients}  # consumer, classic
    assert h.describe("g").group_state == "Dead"  # no longer a classic group
    assert [(g.group_id, g.group_type) for g in h.list_groups().groups] == [("g", "consumer")]


def test_the_converted_members_keep_their_partitions_until_they_rejoin() -> None:
    h = Harness()
    a, b, generation = classic_group(h)
    h.consumer_heartbeat("g", "c", 0)
    members = {m.member_id: m for m in h.consumer_describe("g").members}
    assert [tp.partitions for tp in members[a].assignment.topic_partitions] == [(0, 1)]
    assert [tp.partitions for tp in members[b].assignment.topic_partitions] == [(2, 3)]
    # Their generation is behind the group's: they must rejoin.
    assert h.heartbeat("g", a, generation) is ErrorCode.rebalance_in_progress
    assert h.heartbeat("g", a, generation - 1) is ErrorCode.illegal_generation


def test_the_upgraded_group_comes_back_after_a_reload() -> None:
    h = Harness()
    clients, epoch, _c_owned = upgrade(h)
    before = h.consumer_describe("g")
    h.restart()
    after = h.consumer_describe("g")
    assert after.group_epoch == before.group_epoch
    assert sorted(after.members, key=lambda m: m.member_id) == sorted(
        before.members, key=lambda m: m.member_id
    )
    # The classic members are still classic members, the consumer one goes on.
    for client in clients:
        assert h.heartbeat("g", client.member_id, client.generation) is ErrorCode.none
    assert h.consumer_heartbeat("g", "c", epoch).error_code is ErrorCode.none


def test_the_upgrade_is_refused_when_the_policy_forbids_it() -> None:
    for policy in ("disabled", "downgrade"):
        h = Harness(consumer_config=ConsumerGroupConfig(migration_policy=policy))
        classic_group(h)
        response = h.consumer_heartbeat("g", "c", 0)
        assert response.error_code is ErrorCode.group_id_not_found
        assert h.describe("g").group_state == "Stable"


def test_the_upgrade_is_refused_for_a_group_larger_than_a_consumer_group_may_be() -> None:
    h = Harness(consumer_config=ConsumerGroupConfig(max_size=1))
    a, _, generation = classic_group(h)
    assert h.consumer_heartbeat("g", "c", 0).error_code is ErrorCode.group_id_not_found
    # As large as allowed: converted, then full for the new member; still classic.
    h = Harness(consumer_config=ConsumerGroupConfig(max_size=2))
    a, _, generation = classic_group(h)
    assert h.consumer_heartbeat("g", "c", 0).error_code is ErrorCode.group_max_size_reached
    assert h.describe("g").group_state == "Stable"
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.heartbeat("g", a, generation) is ErrorCode.none
    h.restart()
    assert h.describe("g").group_state == "Stable"


def test_a_classic_group_of_another_protocol_type_is_not_upgraded() -> None:
    h = Harness()
    h.form_group("g", 1, protocols=(("range", meta()),))  # "consumer" type, opaque assignment
    h2 = Harness()
    token = h2.join_new("g", protocol_type="connect", protocols=(("v1", b"x"),))[1]
    for _ in range(10):
        if h2.reply(token) is not None:
            break
        h2.advance(h2.config.initial_rebalance_delay_ms)
    assert h2.reply(token).error_code is ErrorCode.none
    assert h2.consumer_heartbeat("g", "c", 0).error_code is ErrorCode.group_id_not_found


def test_a_failed_append_leaves_the_group_classic() -> None:
    h = Harness()
    a, _, generation = classic_group(h)
    h.fail_next_append = ErrorCode.kafka_storage_error
    assert h.consumer_heartbeat("g", "c", 0).error_code is not ErrorCode.none
    assert h.describe("g").group_state == "Stable"
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.heartbeat("g", a, generation) is ErrorCode.none
    # And the next attempt converts it.
    assert h.consumer_heartbeat("g", "c", 0).error_code is ErrorCode.none


def test_a_new_classic_member_joins_syncs_and_leaves_a_consumer_group() -> None:
    h = Harness()
    _clients, _epoch, _ = upgrade(h)
    protocols = (("range", meta()),)
    first = h.reply(h.join("g", protocols=protocols))
    assert first.error_code is ErrorCode.member_id_required
    d = first.member_id
    joined = h.reply(h.join("g", d, protocols=protocols))
    assert joined.error_code is ErrorCode.none
    assert joined.leader == "" and joined.members == ()
    synced = h.sync_response(h.sync("g", d, joined.generation_id))
    assert synced.error_code is ErrorCode.none
    assert decode_assignment(synced.assignment).partitions == []  # all still held by others
    assert h.heartbeat("g", d, joined.generation_id) in (
        ErrorCode.none,
        ErrorCode.rebalance_in_progress,
    )
    wrong = h.sync_response(h.sync("g", d, joined.generation_id, protocol_name="roundrobin"))
    assert wrong.error_code is ErrorCode.inconsistent_group_protocol
    # Another protocol type, or no protocol in common with the classic members.
    refused = h.reply(h.join("g", protocols=(("roundrobin", meta()),)))
    assert refused.error_code is ErrorCode.inconsistent_group_protocol
    left = h.leave("g", (d, None))
    assert [m.error_code for m in left.members] == [ErrorCode.none]
    assert d not in {m.member_id for m in h.consumer_describe("g").members}
    assert h.heartbeat("g", d, joined.generation_id) is ErrorCode.unknown_member_id
    unknown = h.leave("g", ("nobody", None))
    assert [m.error_code for m in unknown.members] == [ErrorCode.unknown_member_id]


def test_a_silent_classic_member_is_removed_after_its_session_timeout() -> None:
    h = Harness(consumer_config=ConsumerGroupConfig(session_timeout_ms=45_000))
    clients, epoch, c_owned = upgrade(h)
    _a, b = clients
    for _ in range(3):
        h.advance(SESSION_MS - 1_000)
        b.poll()
        epoch, c_owned = owned_by_consumer(h, "c", epoch, c_owned)
    members = {m.member_id for m in h.consumer_describe("g").members}
    assert members == {b.member_id, "c"}


def test_a_classic_member_that_does_not_rejoin_in_time_is_removed() -> None:
    h = Harness()
    a, _b, generation = classic_group(h)
    h.consumer_heartbeat("g", "c", 0)
    assert h.heartbeat("g", a, generation) is ErrorCode.rebalance_in_progress
    for _ in range(REBALANCE_MS // (SESSION_MS // 2) + 1):
        h.advance(SESSION_MS // 2)
        h.heartbeat("g", a, generation)  # alive, but never rejoins
    assert a not in {m.member_id for m in h.consumer_describe("g").members}


def test_classic_members_commit_with_their_generation() -> None:
    h = Harness()
    clients, _, _ = upgrade(h)
    a = clients[0]
    ok = h.commit(
        "g", {("t", a.owned[0]): 5}, member_id=a.member_id, generation=a.generation, version=8
    )
    assert ok == {("t", a.owned[0]): ErrorCode.none}
    stale = h.commit("g", {("t", 0): 6}, member_id=a.member_id, generation=a.generation - 1)
    assert stale == {("t", 0): ErrorCode.illegal_generation}


def test_the_fast_heartbeat_path_answers_as_the_general_one() -> None:
    h = Harness()
    a, _, generation = classic_group(h)
    h.consumer_heartbeat("g", "c", 0)
    # Told to rejoin, the member gets a rebalance timeout: a new timer, which
    # only the general path arms; once armed the fast path answers.
    assert h.shard.heartbeat_now("g", a, None, generation, h.now) is None
    assert h.heartbeat("g", a, generation) is ErrorCode.rebalance_in_progress
    fast = h.shard.heartbeat_now("g", a, None, generation, h.now)
    assert fast is ErrorCode.rebalance_in_progress
    assert h.shard.heartbeat_now("g", "nobody", None, generation, h.now) is (
        ErrorCode.unknown_member_id
    )


def downgrade(h: Harness) -> list[ClassicClient]:
    clients, _epoch, _ = upgrade(h)
    left = h.consumer_heartbeat("g", "c", -1)
    assert left.error_code is ErrorCode.none
    return clients


def test_the_group_becomes_classic_when_its_last_consumer_member_leaves() -> None:
    h = Harness()
    clients = downgrade(h)
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    described = h.describe("g")
    assert described.group_state == "PreparingRebalance"
    assert {m.member_id for m in described.members} == {c.member_id for c in clients}
    # The classic members are told to rejoin, and form a classic generation.
    tokens = []
    for client in clients:
        assert h.heartbeat("g", client.member_id, client.generation) is (
            ErrorCode.rebalance_in_progress
        )
        tokens.append(h.join("g", client.member_id, protocols=(("range", meta(client.owned)),)))
    joined = [h.reply(t) for t in tokens]
    assert all(j is not None and j.error_code is ErrorCode.none for j in joined), joined
    leader = next(j for j in joined if j.leader == j.member_id)
    assert len(leader.members) == 2
    assert h.describe("g").group_state == "CompletingRebalance"


def test_the_downgraded_group_comes_back_classic_after_a_reload() -> None:
    h = Harness()
    clients = downgrade(h)
    h.restart()
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    described = h.describe("g")
    assert described.group_state == "Stable"
    assert {m.member_id for m in described.members} == {c.member_id for c in clients}
    for member in described.members:
        # Each member keeps its last assignment, in the consumer protocol.
        assert decode_assignment(member.member_assignment).partitions


def test_a_fenced_consumer_member_downgrades_the_group_too() -> None:
    h = Harness(consumer_config=ConsumerGroupConfig(session_timeout_ms=45_000))
    clients, _, _ = upgrade(h)
    for _ in range(10):  # c goes silent; the classic members keep heartbeating
        h.advance(SESSION_MS // 2)
        for client in clients:
            h.heartbeat("g", client.member_id, client.generation)
    assert h.consumer_describe("g").error_code is ErrorCode.group_id_not_found
    assert h.describe("g").group_state in ("PreparingRebalance", "CompletingRebalance", "Stable")


def test_the_downgrade_follows_the_policy() -> None:
    for policy, kind in (("upgrade", "consumer"), ("bidirectional", "classic")):
        h = Harness(consumer_config=ConsumerGroupConfig(migration_policy=policy))
        downgrade(h)
        assert [g.group_type for g in h.list_groups().groups] == [kind]


def test_the_downgrade_respects_the_classic_group_max_size() -> None:
    h = Harness(CoordinatorConfig(max_size=2))
    upgrade(h)
    protocols = (("range", meta()),)
    d = h.reply(h.join("g", protocols=protocols)).member_id
    assert h.reply(h.join("g", d, protocols=protocols)).error_code is ErrorCode.none
    h.consumer_heartbeat("g", "c", -1)
    # Three classic members are more than group.max.size: it stays a consumer group.
    assert [g.group_type for g in h.list_groups().groups] == ["consumer"]


def test_the_fast_heartbeat_path_serves_a_settled_classic_member() -> None:
    h = Harness()
    clients, _, _ = upgrade(h)
    for client in clients:
        assert h.shard.heartbeat_now("g", client.member_id, None, client.generation, h.now) is (
            ErrorCode.none
        )
        assert h.shard.heartbeat_now("g", client.member_id, None, client.generation + 1, h.now) is (
            ErrorCode.illegal_generation
        )


def test_a_classic_join_to_a_consumer_group_checks_the_session_timeout() -> None:
    h = Harness(CoordinatorConfig(min_session_timeout_ms=6_000, max_session_timeout_ms=60_000))
    upgrade(h)
    protocols = (("range", meta()),)
    for session in (5_999, 60_001):
        refused = h.reply(h.join("g", "x", protocols=protocols, session=session))
        assert refused.error_code is ErrorCode.invalid_session_timeout


def test_a_static_classic_member_restarting_takes_over_its_old_self() -> None:
    h = Harness()
    upgrade(h)
    protocols = (("range", meta()),)
    joined = h.reply(h.join("g", instance="s", protocols=protocols))  # no MEMBER_ID_REQUIRED
    assert joined.error_code is ErrorCode.none
    old_id = joined.member_id
    synced = h.sync_response(h.sync("g", old_id, joined.generation_id, instance="s"))
    assert synced.error_code is ErrorCode.none
    # Restarted: a new member id under the same instance id replaces the old one.
    again = h.reply(h.join("g", instance="s", protocols=protocols))
    assert again.error_code is ErrorCode.none and again.member_id != old_id
    members = {m.member_id: m.instance_id for m in h.consumer_describe("g").members}
    assert members[again.member_id] == "s" and old_id not in members
    assert h.heartbeat("g", old_id, joined.generation_id, instance="s") is (
        ErrorCode.unknown_member_id
    )
    # The old id naming the instance is fenced.
    fenced = h.reply(h.join("g", old_id, instance="s", protocols=protocols))
    assert fenced.error_code is ErrorCode.fenced_instance_id
