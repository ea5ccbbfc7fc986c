"""A stable KIP-848 member's heartbeat answered on the spot (the shard's
``consumer_heartbeat_now``) gets the bytes the general path would send, and
leaves the group as the general path would, over random runs of joins,
acknowledgements, subscription changes, new topics, leaves and silences."""

from __future__ import annotations

import itertools
import random
import struct
import uuid
from io import BytesIO

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse
from kio.serial import entity_writer

from kgroups.errors import ErrorCode
from kgroups.protocol.consumer_heartbeat_wire import unchanged_answer
from kgroups.protocol.header import response_header
from kgroups.protocol.types import GroupId, i32

from .harness import Harness

CORRELATION = 7
_write = entity_writer(ConsumerGroupHeartbeatResponse)


def _general_bytes(response: ConsumerGroupHeartbeatResponse) -> bytes:
    buf = BytesIO()
    _write(buf, response)
    body = response_header(CORRELATION, flexible=True) + buf.getvalue()
    return struct.pack(">i", len(body)) + body


class Member:
    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: dict[str, list[int]] = {}


class Pair:
    """The same requests to two shards; ``fast`` takes the spot answer when it can."""

    def __init__(self) -> None:
        self.general = Harness()
        self.fast = Harness()
        self.taken = 0
        self.topic_ids = itertools.count(1)
        for name, count in self.general.topics.items():
            self.put(name, count)

    def put(self, name: str, partitions: int) -> None:
        """A topic with the same id in both (a new one, or more partitions)."""
        old = self.general.topic_image.topics.get(name)
        topic_id = uuid.UUID(int=next(self.topic_ids)) if old is None else old.topic_id
        for h in self.both():
            h.topics[name] = partitions
            h.topic_image.put(name, partitions, topic_id)

    def both(self) -> tuple[Harness, Harness]:
        return self.general, self.fast

    def unchanged(self, member: Member, epoch: int) -> bytes:
        g = self.general.consumer_heartbeat("g", member.member_id, epoch)
        expected = _general_bytes(g)
        f = self.fast
        interval = f.shard.consumer_heartbeat_now(
            "g", member.member_id, epoch, "client", "/10.0.0.1", f.now
        )
        if interval is None:
            got = _general_bytes(f.consumer_heartbeat("g", member.member_id, epoch))
        else:
            self.taken += 1
            got = unchanged_answer(1, CORRELATION, member.member_id, epoch, interval)
        assert got == expected
        self._learn(member, g)
        return got

    def full(self, member: Member, **fields: object) -> None:
        answers = [
            h.consumer_heartbeat("g", member.member_id, member.epoch, **fields)  # type: ignore[arg-type]
            for h in self.both()
        ]
        assert _general_bytes(answers[0]) == _general_bytes(answers[1])
        self._learn(member, answers[0])

    def _learn(self, member: Member, response: ConsumerGroupHeartbeatResponse) -> None:
        if response.error_code is not ErrorCode.none:
            member.epoch = 0
            member.owned = {}
            return
        member.epoch = response.member_epoch
        if response.assignment is not None:
            member.owned = self.general.owned(response)

    def check(self) -> None:
        assert self.general.log == self.fast.log
        assert self.general.consumer_describe("g") == self.fast.consumer_describe("g")


@pytest.mark.parametrize("seed", range(12))
def test_the_spot_answer_matches_the_general_path(seed: int) -> None:
    rng = random.Random(seed)
    pair = Pair()
    members = [Member(f"m{i}") for i in range(4)]
    for step in range(300):
        member = rng.choice(members)
        roll = rng.random()
        if member.epoch <= 0 or roll < 0.05:
            topics = rng.choice([("t",), ("u",), ("t", "u")])
            if rng.random() < 0.3:
                member.epoch = 0
                pair.full(member, topics=(), regex=rng.choice(["t.*", "u|new.*"]))
            else:
                member.epoch = 0
                pair.full(member, topics=topics)
        elif roll < 0.25:
            pair.full(member, owned=member.owned)
        elif roll < 0.3:
            pair.full(member, topics=rng.choice([("t",), ("u",), ("t", "u")]), owned=member.owned)
        elif roll < 0.33:
            member.epoch = -1
            pair.full(member)
        elif roll < 0.35:
            if rng.random() < 0.5:
                pair.put(f"new{step}", 2)
            else:
                name = rng.choice(["t", "u"])
                pair.put(name, pair.general.topics[name] + 1)
        elif roll < 0.4:
            pair.unchanged(member, member.epoch + rng.choice([-1, 1]))
        else:
            pair.unchanged(member, member.epoch)
        if rng.random() < 0.3:
            delta = rng.choice([100, 2_000, 6_000, 12_000, 50_000])
            for h in pair.both():
                h.advance(delta)
        pair.check()
    assert pair.taken > 20  # the spot path was exercised


def _rack_change(h: Harness, member_id: str, epoch: int) -> None:
    """A heartbeat that stores the member's new rack (a record, no new epoch)."""
    request = ConsumerGroupHeartbeatRequest(
        group_id=GroupId("g"),
        member_id=member_id,
        member_epoch=i32(epoch),
        rack_id="rack-2",
        topic_partitions=None,
    )
    h.handle(h.shard.consumer_group_heartbeat(request, h.ctx(h.token("rack"), 1), h.now))


def test_a_group_with_a_write_not_yet_durable_takes_the_general_path() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    epoch = a.member_epoch
    now = h.shard.consumer_heartbeat_now
    assert now("g", "a", epoch, "client", "/10.0.0.1", h.now) == 5_000
    h.held = []
    _rack_change(h, "a", epoch)
    assert h.held and h.held[0].append_token is not None
    assert now("g", "a", epoch, "client", "/10.0.0.1", h.now) is None
    h.held = None


def test_only_the_members_own_client_and_host_are_answered_on_the_spot() -> None:
    # Another client id or host is stored by the general path (a record).
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    now = h.shard.consumer_heartbeat_now
    assert now("g", "a", a.member_epoch, "other", "/10.0.0.1", h.now) is None
    assert now("g", "a", a.member_epoch, "client", "/10.0.0.2", h.now) is None
    assert now("g", "a", a.member_epoch, "client", "/10.0.0.1", h.now) == 5_000


def test_the_spot_answer_keeps_the_member_alive_as_the_general_path_does() -> None:
    h = Harness()
    a = h.consumer_heartbeat("g", "a", 0)
    for _ in range(10):
        h.advance(40_000)  # under the 45 s session timeout
        assert h.shard.consumer_heartbeat_now(
            "g", "a", a.member_epoch, "client", "/10.0.0.1", h.now
        )
    assert h.consumer_describe("g").group_state == "Stable"
    h.advance(46_000)
    assert h.consumer_describe("g").group_state == "Empty"
    assert (
        h.shard.consumer_heartbeat_now("g", "a", a.member_epoch, "client", "/10.0.0.1", h.now)
        is None
    )
