"""`kgroups groups describe` of a consumer group mid-reconciliation: what each
member still has to revoke or receive, from its current and target assignment."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from kio.schema.consumer_group_describe.v1.response import (
    Assignment,
    DescribedGroup,
    Member,
    TopicPartitions,
)
from kio.schema.errors import ErrorCode
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32

from kgroups.commands.groups import _describe_consumer_group

ORDERS = uuid.UUID(int=1)


def _assignment(partitions: list[int]) -> Assignment:
    return Assignment(
        topic_partitions=(
            TopicPartitions(
                topic_id=ORDERS,
                topic_name=TopicName("orders"),
                partitions=tuple(i32(p) for p in partitions),
            ),
        )
    )


def _member(member_id: str, epoch: int, current: list[int], target: list[int]) -> Member:
    return Member(
        member_id=member_id,
        instance_id=None,
        member_epoch=i32(epoch),
        client_id=member_id,
        client_host="/127.0.0.1",
        subscribed_topic_names=(TopicName("orders"),),
        subscribed_topic_regex="",
        assignment=_assignment(current),
        target_assignment=_assignment(target),
    )


class FakeAdmin:
    async def committed(self, group: str) -> dict[tuple[str, int], int]:
        return {("orders", 0): 5}

    async def find_coordinators(self, groups: list[str]) -> dict[str, Any]:
        return {g: (1, "127.0.0.1", 9092) for g in groups}

    async def log_offsets(self, topic: str, partitions: set[int], ts: int) -> dict[int, int]:
        return {p: 8 for p in partitions}


# b joined at epoch 3: a gives up partitions 2 and 3, which b receives once they are free.
GROUP = DescribedGroup(
    error_code=ErrorCode.none,
    group_id=GroupId("billing"),
    group_state="Reconciling",
    group_epoch=i32(3),
    assignment_epoch=i32(3),
    assignor_name="range",
    members=(_member("a", 2, [0, 1, 2, 3], [0, 1]), _member("b", 3, [], [2, 3])),
)


def test_members_show_what_they_still_revoke_and_receive() -> None:
    out = json.loads(asyncio.run(_describe_consumer_group(FakeAdmin(), GROUP, "json")))  # type: ignore[arg-type]
    a, b = out["members"]
    assert (a["revoking"], a["receiving"]) == (["orders-2", "orders-3"], [])
    assert (b["revoking"], b["receiving"]) == ([], ["orders-2", "orders-3"])
    assert a["subscribed_topic_regex"] is None
    # Lag is per partition, the owner being the member that holds it now.
    assert [(p["partition"], p["lag"], p["member_id"]) for p in out["partitions"]] == [
        (0, 3, "a"),
        (1, None, "a"),
        (2, None, "a"),
        (3, None, "a"),
    ]

    text = asyncio.run(_describe_consumer_group(FakeAdmin(), GROUP, "table"))  # type: ignore[arg-type]
    head, members, _ = text.split("\n\n")
    assert head == (
        "Group billing: Reconciling (consumer group), group epoch 3, assignment epoch 3, "
        "assignor range, 2 member(s), coordinator broker 1 (127.0.0.1:9092)"
    )
    rows = [line.split() for line in members.splitlines()[1:]]
    assert rows == [
        [
            "a",
            "-",
            "a",
            "/127.0.0.1",
            "2",
            "orders",
            "orders-0,orders-1,orders-2,orders-3",
            "orders-0,orders-1",
            "orders-2,orders-3",
            "-",
        ],
        [
            "b",
            "-",
            "b",
            "/127.0.0.1",
            "3",
            "orders",
            "-",
            "orders-2,orders-3",
            "-",
            "orders-2,orders-3",
        ],
    ]
    # Columns are aligned: every row's cells start where the header's do.
    header = members.splitlines()[0]
    for line in members.splitlines()[1:]:
        assert line.index("/127.0.0.1") == header.index("HOST")
