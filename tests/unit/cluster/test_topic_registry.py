"""The topic registry on disk holds every change, however writes interleave."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kgroups.errors import ErrorCode, KafkaError
from kgroups.partitions import topic_registry as topics_module
from kgroups.partitions.topic_registry import Topic, TopicRegistry


def _names_on_disk(log_dir: Path) -> set[str]:
    return {t.name for t in TopicRegistry(log_dir)}


def test_batched_and_single_writes_interleaving_keep_every_topic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = TopicRegistry(tmp_path)
    real_write = topics_module._write_registry

    def slow_write(*args: Any) -> None:
        time.sleep(0.2)  # long enough for the loop to write meanwhile
        real_write(*args)

    async def scenario() -> None:
        monkeypatch.setattr(topics_module, "_write_registry", slow_write)
        batch = asyncio.ensure_future(
            registry.add_all([Topic(f"new-{i}", uuid.uuid4(), 1) for i in range(3)])
        )
        await asyncio.sleep(0.05)  # the batch's write is under way on a worker thread
        monkeypatch.setattr(topics_module, "_write_registry", real_write)
        registry.add("__consumer_offsets", 5, {})
        await batch

    asyncio.run(scenario())
    expected = {"new-0", "new-1", "new-2", "__consumer_offsets"}
    assert {t.name for t in registry} == expected
    assert _names_on_disk(tmp_path) == expected
    asyncio.run(registry.remove_all(["new-1", "new-2"]))
    assert _names_on_disk(tmp_path) == {"new-0", "__consumer_offsets"}


def test_reserved_names_cannot_be_created(tmp_path: Path) -> None:
    registry = TopicRegistry(tmp_path)
    registry.reserve("my.topic")
    with pytest.raises(KafkaError) as e:
        registry.check_new("my.topic")
    assert e.value.error_code == ErrorCode.topic_already_exists
    with pytest.raises(KafkaError) as e:
        registry.check_new("my_topic")  # nor a name colliding with it
    assert e.value.error_code == ErrorCode.invalid_topic_exception
    registry.release("my.topic")
    registry.check_new("my.topic")
