"""Running out of file descriptors while creating a topic leaves no half topic.

The broker runs with a low RLIMIT_NOFILE, so a CreateTopics of many partitions
fails midway (EMFILE). The answer is KAFKA_STORAGE_ERROR for that topic, its
partition directories are gone, the registry does not list it, the broker goes
on serving, and a restart succeeds without it.
"""

from __future__ import annotations

import json
import resource
from datetime import timedelta
from pathlib import Path

from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.partitions.topic_registry import REGISTRY_FILE
from kgroups.protocol.types import TopicName, i16, i32

from process_broker import BrokerProcess
from raw_wire import call_once

FD_LIMIT = 256
TIMEOUT = i32Timedelta.parse(timedelta(seconds=60))


def _few_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _create(name: str, partitions: int) -> CreateTopicsRequest:
    topic = CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(partitions),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    return CreateTopicsRequest(topics=(topic,), timeout=TIMEOUT, validate_only=False)


def _metadata(*names: str) -> MetadataRequest:
    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=None, name=TopicName(n)) for n in names),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def _registered(data: Path) -> set[str]:
    return {t["name"] for t in json.loads((data / REGISTRY_FILE).read_text())["topics"]}


def test_emfile_during_create_topics_leaves_no_half_topic(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, None, preexec_fn=_few_fds).start()
    try:
        # Each partition keeps three files open: 200 partitions cannot fit in 256.
        response = call_once(broker.port, _create("too-big", 200))
        result = response.topics[0]
        assert result.error_code == ErrorCode.kafka_storage_error, result
        assert not list(data.glob("too-big-*"))
        assert "too-big" not in _registered(data)
        (described,) = call_once(broker.port, _metadata("too-big")).topics
        assert described.error_code == ErrorCode.unknown_topic_or_partition

        # Still serving, with its descriptors back.
        assert call_once(broker.port, _create("small", 3)).topics[0].error_code == ErrorCode.none

        broker.kill()
        broker.start()
        too_big, small = call_once(broker.port, _metadata("too-big", "small")).topics
        assert too_big.error_code == ErrorCode.unknown_topic_or_partition
        assert small.error_code == ErrorCode.none and len(small.partitions) == 3
        assert not list(data.glob("too-big-*"))
    finally:
        broker.stop()
