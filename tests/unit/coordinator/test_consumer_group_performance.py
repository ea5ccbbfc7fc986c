"""A stable member's heartbeat in a stable group costs the same whatever the
group's size: it writes nothing and walks no member list."""

from __future__ import annotations

import time
import uuid
from types import MappingProxyType

from kio.schema.errors import ErrorCode

from kgroups.coordinator.consumer import (
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    HeartbeatRequest,
    TopicImage,
)
from kgroups.coordinator.consumer.records import (
    CURRENT_MEMBER_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    TARGET_ASSIGNMENT_MEMBER,
    TARGET_ASSIGNMENT_METADATA,
    CurrentMemberAssignmentValue,
    GroupKey,
    GroupMetadataValue,
    MemberKey,
    MemberMetadataValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
)
from kgroups.coordinator.consumer.topics import metadata_hash

TOPIC = uuid.UUID(int=3)


def stable_group(size: int) -> tuple[ConsumerGroupCoordinator, TopicImage]:
    """A reconciled group of ``size`` members, each owning one partition,
    built from its records."""
    topics = TopicImage()
    topics.put("t", size, TOPIC)
    coordinator = ConsumerGroupCoordinator()
    replay = coordinator.table.replay
    for i in range(size):
        member_id = f"m{i}"
        replay(
            MemberKey(MEMBER_METADATA, "g", member_id),
            MemberMetadataValue(None, None, "c", "h", ("t",), None, 60_000, None),
        )
        mine = MappingProxyType({TOPIC: frozenset({i})})
        replay(
            MemberKey(TARGET_ASSIGNMENT_MEMBER, "g", member_id), TargetAssignmentMemberValue(mine)
        )
        replay(
            MemberKey(CURRENT_MEMBER_ASSIGNMENT, "g", member_id),
            CurrentMemberAssignmentValue(1, 0, 0, mine, MappingProxyType({})),
        )
    replay(GroupKey(GROUP_METADATA, "g"), GroupMetadataValue(1, metadata_hash(["t"], topics)))
    replay(GroupKey(TARGET_ASSIGNMENT_METADATA, "g"), TargetAssignmentMetadataValue(1))
    coordinator.on_loaded(0)
    return coordinator, topics


def heartbeat_seconds(size: int, rounds: int = 2_000) -> float:
    coordinator, topics = stable_group(size)
    group = coordinator.table.get("g")
    assert group is not None and group.state is ConsumerGroupState.STABLE
    requests = [
        HeartbeatRequest(
            group_id="g", member_id=f"m{i % size}", member_epoch=1, client_id="c", client_host="h"
        )
        for i in range(rounds)
    ]
    start = time.perf_counter()
    for now, request in enumerate(requests):
        records, answer = coordinator.heartbeat(request, topics, now)
        assert not records and answer.error_code is ErrorCode.none
    return time.perf_counter() - start


def test_a_stable_heartbeat_does_not_grow_with_the_group() -> None:
    heartbeat_seconds(10, 200)  # warm up
    small = min(heartbeat_seconds(10) for _ in range(3))
    large = min(heartbeat_seconds(20_000) for _ in range(3))
    # O(n) work per heartbeat would make the large group 2,000 times slower.
    assert large < small * 4, (small, large)
