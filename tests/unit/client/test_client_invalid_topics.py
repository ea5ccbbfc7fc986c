"""A topic the brokers answer with INVALID_TOPIC_EXCEPTION in Metadata fails the
poll, naming it, even when the name passes the client's own check."""

from __future__ import annotations

import asyncio

import pytest

from kgroups.client import AsyncConsumer, InvalidTopicError
from kgroups.client.cluster import TopicInfo
from kgroups.errors import ErrorCode


def test_invalid_topic_from_metadata_fails_the_poll() -> None:
    async def scenario() -> None:
        consumer = AsyncConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
        asked: list[list[str] | None] = []

        async def refresh(topics: list[str] | None = None, auto_create: bool = False) -> None:
            asked.append(topics)
            for name in topics or ():
                error = ErrorCode.invalid_topic_exception if name == "refused" else ErrorCode.none
                consumer._cluster.metadata.topics[name] = TopicInfo(name, {}, error=error)

        consumer._cluster.refresh = refresh  # type: ignore[method-assign]
        consumer.subscribe(["fine", "refused"])
        with pytest.raises(InvalidTopicError) as caught:
            await consumer.poll(1)
        assert asked == [["fine", "refused"]]
        assert caught.value.topics == ["refused"]
        assert "'refused'" in str(caught.value)
        await consumer.close()

    asyncio.run(asyncio.wait_for(scenario(), 10))
