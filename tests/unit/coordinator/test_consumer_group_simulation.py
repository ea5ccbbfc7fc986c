"""Random runs of honest clients against the consumer group model: no
partition is ever owned by two clients at once, and once membership stops
changing the group settles with every partition owned."""

from __future__ import annotations

import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import ConsumerGroupState

from .consumer_group_harness import FOO, Harness, snapshot


class Client:
    """A consumer as the protocol expects it: it takes the partitions an answer
    gives it at once, gives up the others over a few heartbeats (its
    revocation callback takes time), and rejoins owning nothing when fenced."""

    def __init__(
        self,
        member_id: str,
        topics: tuple[str, ...],
        rng: random.Random,
        regex: str | None = None,
    ) -> None:
        self.member_id = member_id
        self.topics = topics
        self.regex = regex
        self.rng = rng
        self.epoch = 0
        self.owned: dict[uuid.UUID, set[int]] = {}
        self.kept: dict[uuid.UUID, set[int]] | None = None  # once revoked

    def heartbeat(self, h: Harness) -> None:
        if self.epoch == 0:
            answer = h.join(self.member_id, topics=self.topics, subscribed_topic_regex=self.regex)
        else:
            answer = h.heartbeat(
                self.member_id,
                self.epoch,
                owned_partitions=[(t, sorted(p)) for t, p in self.owned.items()],
            )
        if answer.error_code in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id):
            self.epoch, self.owned, self.kept = 0, {}, None
            return
        assert answer.error_code is ErrorCode.none, answer
        self.epoch = answer.member_epoch
        if answer.assignment is not None:
            given = {t: set(p) for t, p in answer.assignment.items() if p}
            for topic_id, partitions in given.items():
                self.owned.setdefault(topic_id, set()).update(partitions)
            self.kept = given
        if self.kept is not None and self.rng.random() < 0.5:
            self.owned, self.kept = self.kept, None


def assert_no_partition_owned_twice(h: Harness, clients: list[Client]) -> None:
    """Among the clients the group still counts as members: one it removed
    (its session ended) may not know yet, but its commits are refused."""
    group = h.coordinator.table.get("g")
    members = {} if group is None else group.members
    seen: set[tuple[uuid.UUID, int]] = set()
    for client in clients:
        if client.member_id not in members:
            continue
        for topic_id, partitions in client.owned.items():
            for partition in partitions:
                assert (topic_id, partition) not in seen, (topic_id, partition)
                seen.add((topic_id, partition))


@pytest.mark.parametrize("seed", range(12))
def test_random_membership_changes_never_share_a_partition(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(session_timeout_ms=20_000)
    clients: list[Client] = []
    silent: list[Client] = []  # crashed: still owning, never heard again
    names = iter(f"c{i}" for i in range(1_000))
    for _ in range(300):
        action = rng.random()
        if action < 0.1 or not clients:
            topics = rng.choice([("foo",), ("foo", "bar"), ("bar",)])
            clients.append(Client(next(names), topics, rng))
        elif action < 0.14 and len(clients) > 1:
            leaving = clients.pop(rng.randrange(len(clients)))
            if leaving.epoch > 0:
                h.heartbeat(leaving.member_id, -1)
        elif action < 0.17 and len(clients) > 1:
            silent.append(clients.pop(rng.randrange(len(clients))))
        elif action < 0.19:
            h.topics.put("foo", h.topics.topics["foo"].partitions + 1, FOO)
        elif action < 0.3:
            h.advance(rng.randrange(1, 4_000))
        else:
            rng.choice(clients).heartbeat(h)
        # A crashed client still owns its partitions until its session ends.
        assert_no_partition_owned_twice(h, clients + silent)
    # Membership stops changing: everybody heartbeats until the group settles.
    h.advance(20_000)  # the crashed clients' sessions end
    for _ in range(30):
        for client in clients:
            client.heartbeat(h)
            assert_no_partition_owned_twice(h, clients)
    assert h.group.state is ConsumerGroupState.STABLE
    owned = {(t, p) for c in clients for t, ps in c.owned.items() for p in ps}
    subscribed = {name for c in clients for name in c.topics}
    expected = {
        (h.topics.topics[name].topic_id, p)
        for name in subscribed
        for p in range(h.topics.topics[name].partitions)
    }
    assert owned == expected
    assert snapshot(h.replayed().groups["g"]) == snapshot(h.group)
