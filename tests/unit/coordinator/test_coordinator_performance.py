"""Large groups: a thousand (five thousand) members joining at once and syncing.

Only the shard's own CPU time is measured; requests are built beforehand.
Completing a join phase must be linear in the number of members.
"""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.static.primitive import i32

from kgroups.coordinator import CoordinatorConfig, GroupCoordinatorShard, GroupState, RequestContext

from .harness import START_MS, ms, subscription

PROTOCOLS = (
    JoinGroupRequestProtocol(name="cooperative-sticky", metadata=subscription("t", "u")),
    JoinGroupRequestProtocol(name="range", metadata=subscription("t", "u")),
)


def join_request(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="big",  # type: ignore[arg-type]
        session_timeout=ms(45_000),
        rebalance_timeout=ms(300_000),
        member_id=member_id,
        protocol_type="consumer",
        protocols=PROTOCOLS,
    )


def sync_request(member_id: str, generation: int, assignments: tuple = ()) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id="big",  # type: ignore[arg-type]
        generation_id=i32(generation),
        member_id=member_id,
        protocol_type="consumer",
        protocol_name="cooperative-sticky",
        assignments=assignments,
    )


def rebalance_cpu_seconds(size: int) -> float:
    shard = GroupCoordinatorShard(
        0,
        CoordinatorConfig(),
        partition_exists=lambda t, p: True,
        new_member_id=lambda prefix: f"{prefix}-{next(ids)}",
    )
    ids = iter(range(1, 10 * size))
    contexts = [RequestContext(9, f"c{i}", "/10.0.0.1", reply_to=("join", i)) for i in range(size)]
    first = join_request("")
    now = START_MS
    replies: dict[object, object] = {}
    spent = 0.0

    def timed(call: object, *args: object) -> None:
        nonlocal spent
        started = time.process_time()
        result = call(*args)  # type: ignore[operator]
        # As the shell does once the records are stored: the shard forgets
        # the batch's snapshot.
        shard.append_durable(result.append_token)
        spent += time.process_time() - started
        replies.update(result.replies)

    for ctx in contexts:
        timed(shard.join_group, first, ctx, now)
    member_ids = [replies[ctx.reply_to].member_id for ctx in contexts]  # type: ignore[attr-defined]
    second = [join_request(m) for m in member_ids]
    for ctx, request in zip(contexts, second, strict=True):
        timed(shard.join_group, request, ctx, now)
    while (deadline := shard.next_deadline_ms()) is not None and deadline <= now + 10_000:
        now = deadline
        timed(shard.on_timer, now)
    responses = [replies[ctx.reply_to] for ctx in contexts]
    assert all(r.error_code is ErrorCode.none for r in responses)  # type: ignore[attr-defined]
    generation = responses[0].generation_id  # type: ignore[attr-defined]
    leader = responses[0].leader  # type: ignore[attr-defined]

    assignments = tuple(
        SyncGroupRequestAssignment(member_id=m, assignment=m.encode()) for m in member_ids
    )
    syncs = [
        (
            sync_request(m, generation, assignments if m == leader else ()),
            RequestContext(9, f"c{i}", "/10.0.0.1", reply_to=("sync", i)),
        )
        for i, m in enumerate(member_ids)
    ]
    for request, ctx in syncs:
        timed(shard.sync_group, request, ctx, now)
    beats = [
        (
            HeartbeatRequest(group_id="big", generation_id=i32(generation), member_id=m),  # type: ignore[arg-type]
            RequestContext(4, f"c{i}", "/10.0.0.1", reply_to=("hb", i)),
        )
        for i, m in enumerate(member_ids)
    ]
    for request, ctx in beats:
        timed(shard.heartbeat, request, ctx, now + 3_000)

    view = shard.group("big")
    assert view is not None and view.state is GroupState.STABLE and len(view.members) == size
    assert all(replies[ctx.reply_to].assignment for _, ctx in syncs)  # type: ignore[attr-defined]
    assert all(replies[ctx.reply_to].error_code is ErrorCode.none for _, ctx in beats)  # type: ignore[attr-defined]
    return spent


def test_a_thousand_members_rebalance_well_under_a_second() -> None:
    assert rebalance_cpu_seconds(1_000) < 0.5


def test_five_thousand_members_rebalance_well_under_five_seconds() -> None:
    assert rebalance_cpu_seconds(5_000) < 2.5


def test_rebalancing_grows_linearly_with_the_group() -> None:
    small = min(rebalance_cpu_seconds(500) for _ in range(3))
    large = min(rebalance_cpu_seconds(4_000) for _ in range(3))
    # 8x the members: linear is 8x, quadratic 64x; the slack absorbs a busy
    # machine's noise on the small group's few milliseconds.
    assert large < small * 8 * 4
