"""A commit retried after its member rejoined does not rewind the offsets that the
partition's new owner committed meanwhile."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kgroups.client import AsyncConsumer, CommitFailedError, TopicPartition
from kgroups.client.exceptions import RetriableError
from kgroups.errors import ErrorCode
from kgroups.protocol import apis

from broker_thread import BrokerThread
from interop.test_client_support import create_topic

pytestmark = pytest.mark.interop

TOPIC = "moving"
BOTH = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]


def _member(broker: BrokerThread, name: str) -> AsyncConsumer:
    return AsyncConsumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "moving",
            "client.id": name,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 100,
            "partition.assignment.strategy": "range",
        }
    )


async def _poll_until(members: list[AsyncConsumer], condition: Any, what: str) -> None:
    for _ in range(100):
        await asyncio.gather(*(m.poll(0.1) for m in members))
        if condition():
            return
    raise AssertionError(f"timed out waiting for {what}")


def test_a_stale_commit_retry_does_not_overwrite_the_new_owners_offsets(
    broker: BrokerThread,
) -> None:
    create_topic(broker.bootstrap, TOPIC, 2)

    async def scenario() -> None:
        first, second = _member(broker, "first"), _member(broker, "second")
        try:
            first.subscribe([TOPIC])
            await _poll_until([first], lambda: first.assignment() == set(BOTH), "first joins")
            old_generation = first.generation_id

            # The first member's commit is held up, then meets a retriable error
            # -- after the group has rebalanced and the new owner committed.
            link = first._coordinator.link  # type: ignore[union-attr]
            send = link.send
            in_flight, rebalanced = asyncio.Event(), asyncio.Event()

            async def held_up(request: Any, api_key: int, *args: Any, **kwargs: Any) -> Any:
                if api_key == apis.OFFSET_COMMIT and not in_flight.is_set():
                    in_flight.set()
                    await rebalanced.wait()
                    raise RetriableError(ErrorCode.coordinator_not_available, "held up")
                return await send(request, api_key, *args, **kwargs)

            link.send = held_up  # type: ignore[method-assign]
            commit = asyncio.create_task(first.commit(dict.fromkeys(BOTH, 10)))
            await in_flight.wait()

            second.subscribe([TOPIC])
            await _poll_until(
                [first, second],
                lambda: (
                    bool(second.assignment())
                    and len(first.assignment()) == 1
                    and first.generation_id > old_generation
                ),
                "the partitions to split",
            )
            moved = next(iter(second.assignment()))
            await second.commit({moved: 50})
            rebalanced.set()

            (outcome,) = await asyncio.gather(commit, return_exceptions=True)
            committed = await second.committed([moved])
            assert committed[moved] is not None
            assert committed[moved].offset == 50, "the stale commit rewound the new owner"
            assert isinstance(outcome, CommitFailedError)
        finally:
            await first.close()
            await second.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
