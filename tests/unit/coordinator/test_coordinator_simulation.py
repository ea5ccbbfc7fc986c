"""Deterministic simulation: random schedules of consumers against one shard.

Simulated clients join, sync, heartbeat, commit, leave, crash and restart;
the clock jumps; appends fail now and then. After every step the shard's
invariants are checked, and at the end, once everyone is gone, the log it
wrote must load into the same groups and offsets.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator import GroupState
from kgroups.coordinator.delayed_operations import join_key
from kgroups.coordinator.timers import TimerKind

from .harness import Harness, Token
from .test_coordinator_replay import reload, reload_compacted, stored_view

GROUPS = ("g1", "g2")


class Client:
    def __init__(self, name: str, group: str, instance: str | None) -> None:
        self.name = name
        self.group = group
        self.instance = instance
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: tuple[str, ...] = ()
        self.silent = False
        self.pending: dict[Token, str] = {}  # token -> what it was
        self.protocol = b"v1"


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.h = Harness()
        self.clients = [
            Client(f"c{i}", GROUPS[i % 2], f"inst{i}" if i % 3 == 0 else None) for i in range(8)
        ]
        self.leaders: dict[tuple[str, int], str] = {}
        self.instance_of: dict[str, str] = {}
        self.sent: list[Token] = []
        self.sync_generation: dict[Token, tuple[str, str, int]] = {}

    # -- client behaviour ---------------------------------------------------

    def send(self, client: Client, kind: str, token: Token) -> None:
        client.pending[token] = kind
        self.sent.append(token)

    def join(self, client: Client) -> None:
        token = self.h.join(
            client.group,
            client.member_id,
            instance=client.instance,
            protocols=(("range", client.protocol),),
            client_id=client.name,
        )
        self.send(client, "join", token)

    def sync(self, client: Client) -> None:
        assignments = None
        if client.member_id == client.leader:
            assignments = {
                m: f"{client.group}:{client.generation}:{m}".encode() for m in client.members
            }
        token = self.h.sync(
            client.group,
            client.member_id,
            client.generation,
            assignments,
            instance=client.instance,
        )
        self.sync_generation[token] = (client.group, client.member_id, client.generation)
        self.send(client, "sync", token)

    def act(self, client: Client) -> None:
        roll = self.rng.random()
        if client.silent:
            if roll < 0.3:  # restart: dynamic members come back without their id
                client.silent = False
                if client.instance is None:
                    client.member_id = ""
                self.join(client)
            return
        if roll < 0.25:
            self.join(client)
        elif roll < 0.35 and client.generation >= 0:
            self.sync(client)
        elif roll < 0.65:
            self.heartbeat(client)
        elif roll < 0.75:
            self.commit(client)
        elif roll < 0.8:
            self.h.leave(client.group, (client.member_id, client.instance))
            client.member_id, client.generation = "", -1
        elif roll < 0.85:
            client.silent = True  # crashed: no requests until it restarts
        elif roll < 0.9:
            client.protocol = self.rng.choice([b"v1", b"v2"])  # subscription change
            self.join(client)
        else:
            # Storage fails under a commit or a SyncGroup. (A lost Empty-group
            # record is left out: Kafka accepts that the log then lags behind.)
            self.h.fail_next_append = self.rng.choice(
                [ErrorCode.not_enough_replicas, ErrorCode.not_leader_or_follower]
            )
            if client.generation >= 0 and client.member_id == client.leader:
                self.sync(client)
            else:
                self.commit(client)
            self.h.fail_next_append = None

    def commit(self, client: Client) -> None:
        errors = self.h.commit(
            client.group,
            {("t", self.rng.randrange(4)): self.rng.randrange(1000)},
            member_id=client.member_id,
            generation=client.generation,
            instance=client.instance,
        )
        assert len(errors) == 1

    def heartbeat(self, client: Client) -> None:
        if not client.member_id:
            self.join(client)
            return
        error = self.h.heartbeat(
            client.group, client.member_id, client.generation, instance=client.instance
        )
        if error in (ErrorCode.rebalance_in_progress, ErrorCode.illegal_generation):
            self.join(client)
        elif error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
            client.member_id, client.generation = "", -1

    def absorb(self, client: Client) -> None:
        """Act on answers to the client's outstanding requests."""
        for token, kind in list(client.pending.items()):
            response = self.h.reply(token)
            if response is None:
                continue
            del client.pending[token]
            if kind == "join":
                self.on_join(client, response)
            elif response.error_code is ErrorCode.none:
                self.check_assignment(token, response.assignment)

    def on_join(self, client: Client, response: Any) -> None:
        error = response.error_code
        if error is ErrorCode.member_id_required:
            client.member_id = response.member_id
            self.join(client)
        elif error is ErrorCode.none:
            client.member_id = response.member_id
            client.generation = response.generation_id
            client.leader = response.leader
            client.members = tuple(m.member_id for m in response.members)
            if client.instance is not None:
                self.instance_of[client.member_id] = client.instance
            self.check_leader(client.group, response.generation_id, response.leader)
            if not client.silent:
                self.sync(client)
        elif error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
            client.member_id, client.generation = "", -1

    # -- invariants -----------------------------------------------------------

    @staticmethod
    def identity(member_id: str) -> str:
        # Static members' ids are "<instance id>-<n>": the instance is who they are.
        return member_id.rsplit("-", 1)[0] if member_id.startswith("inst") else member_id

    def check_leader(self, group: str, generation: int, leader: str) -> None:
        """One leader per generation (a static leader keeps its instance id)."""
        known = self.leaders.setdefault((group, generation), self.identity(leader))
        assert known == self.identity(leader), (group, generation, known, leader)

    def check_assignment(self, token: Token, assignment: bytes) -> None:
        """An assignment handed out belongs to the generation asked about."""
        group, member_id, generation = self.sync_generation[token]
        if not assignment:
            return  # the leader left this member out
        assert assignment.startswith(f"{group}:{generation}:".encode()), (assignment, generation)
        if member_id not in self.instance_of:
            # Static members inherit the assignment of the id they replaced.
            assert assignment == f"{group}:{generation}:{member_id}".encode()

    def check_shard(self) -> None:
        shard = self.h.shard
        table = shard._table
        member_timers = set()
        for key in shard._timers._entries:
            if key.kind is TimerKind.RETENTION:
                continue
            group = table.get(key.group_id)
            assert group is not None, key
            if key.kind is TimerKind.MEMBER:
                member_timers.add((key.group_id, key.member_id))
                # Timers only for members and pending members of the group.
                assert group.has(key.member_id) or group.is_pending(key.member_id), key
            elif key.kind is TimerKind.JOIN:
                assert group.is_in(GroupState.PREPARING_REBALANCE), (key, group.state)
            else:
                assert group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
                assert group.pending_sync_members
        for group in table:
            ids = set(group.members)
            assert not ids & group.pending_members  # never both pending and a member
            awaiting_join = [m for m in group.members.values() if m.is_awaiting_join]
            awaiting_sync = [m for m in group.members.values() if m.is_awaiting_sync]
            assert not {m.member_id for m in awaiting_join} & {m.member_id for m in awaiting_sync}
            assert group.num_awaiting_join == len(awaiting_join)
            if group.is_in(GroupState.PREPARING_REBALANCE):
                assert not awaiting_sync
                assert shard._timers.get(join_key(group.group_id)) is not None
            else:
                assert not awaiting_join, group.state
            if group.is_in(GroupState.EMPTY):
                assert not group.members and group.leader_id is None
            if group.members:
                assert group.leader_id in group.members
            if group.is_in(GroupState.STABLE):
                prefix = f"{group.group_id}:{group.generation_id}:".encode()
                for m in group.members.values():
                    assert m.assignment == b"" or m.assignment.startswith(prefix), m.assignment
            for m in group.members.values():
                if m.group_instance_id is not None:
                    assert group.static_member_id(m.group_instance_id) == m.member_id
                if not m.session_is_kept_alive():
                    assert (group.group_id, m.member_id) in member_timers, m.member_id

    # -- the run --------------------------------------------------------------

    def step(self) -> None:
        if self.rng.random() < 0.15:
            self.h.advance(self.rng.choice([0, 100, 1_000, 3_000, 7_000, 12_000]))
        else:
            self.act(self.rng.choice(self.clients))
        for client in self.clients:
            self.absorb(client)
        self.check_shard()

    def settle(self) -> None:
        """Everyone goes quiet; after long enough nothing is left in flight."""
        for client in self.clients:
            client.silent = True
        for _ in range(100):
            self.h.advance(10_000)
            for client in self.clients:
                client.pending = {
                    t: k for t, k in client.pending.items() if self.h.reply(t) is None
                }
        self.check_shard()


@pytest.mark.parametrize("seed", range(6))
def test_random_schedules_keep_the_invariants(seed: int) -> None:
    sim = Simulation(seed)
    for _ in range(2_500):
        sim.step()
    sim.settle()

    h = sim.h
    # Every request was answered, exactly once.
    unanswered = [t for t in sim.sent if h.reply(t) is None]
    assert unanswered == []
    assert max(h.reply_count.values()) == 1
    assert [k for k in h.shard._timers._entries if k.kind is TimerKind.MEMBER] == []
    for group in h.shard.groups():
        assert group.state is GroupState.EMPTY
    # The simulation exercised what it is meant to.
    kinds = Counter(type(r).__name__ for res in h.results for _, r in res.replies)
    assert kinds["JoinGroupResponse"] > 100 and kinds["SyncGroupResponse"] > 50
    assert len({g for g, _ in sim.leaders}) == len(GROUPS)
    assert max(gen for _, gen in sim.leaders) > 5
    # The log reloads into the same groups and offsets.
    assert stored_view(reload(h).shard) == stored_view(h.shard)
    # So does the newest record of each key alone (a compacted log, the loader's way).
    assert stored_view(reload_compacted(h).shard) == stored_view(h.shard)


def test_the_simulation_is_deterministic() -> None:
    logs = []
    for _ in range(2):
        sim = Simulation(42)
        for _ in range(500):
            sim.step()
        logs.append(sim.h.log)
    assert logs[0] == logs[1]
