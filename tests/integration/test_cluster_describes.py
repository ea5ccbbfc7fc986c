"""DescribeLogDirs, DescribeProducers and DescribeTopicPartitions in a
cluster: each broker answers for the partitions it leads, their sizes are
the bytes the store holds, and the store is its one log directory, named
without credentials."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, leaders, produce_batch, running_cluster
from kio.schema.describe_log_dirs.v4 import DescribeLogDirsRequest
from kio.schema.describe_producers.v0 import DescribeProducersRequest
from kio.schema.describe_producers.v0.request import TopicRequest
from kio.schema.describe_topic_partitions.v0 import DescribeTopicPartitionsRequest
from kio.schema.describe_topic_partitions.v0.request import TopicRequest as DescribedTopic

from kgroups.cli import main
from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.types import TopicName, i32
from kgroups.records.batch import encode_batch

from raw_wire import call_once


def batch(pid: int, seq: int, *values: bytes) -> bytes:
    return encode_batch(
        [(None, v, (), 1_000) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq
    )


def log_dirs(port: int) -> Any:
    return call_once(port, DescribeLogDirsRequest(topics=None), timeout=20)


def producers(port: int, topic: str, *partitions: int) -> dict[int, Any]:
    response = call_once(
        port,
        DescribeProducersRequest(
            topics=(
                TopicRequest(name=TopicName(topic), partition_indexes=tuple(map(i32, partitions))),
            )
        ),
        timeout=20,
    )
    return {p.partition_index: p for p in response.topics[0].partitions}


def test_each_broker_describes_what_it_leads(
    tmp_path: Path, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {int(b.properties["broker.id"]): b.port for b in brokers}
        assert create_topic(brokers[0].port, "t", 4) == ErrorCode.none
        led = leaders(brokers[0].port, "t")
        assert leaders(brokers[1].port, "t") == led  # both know the topic
        assert set(led.values()) == {1, 2}  # spread over both brokers
        written = {p: 0 for p in led}
        for p, leader in led.items():
            for seq in range(p + 1):  # a different size for each partition
                sent = batch(100 + p, seq, b"x" * (10 * p + 1))
                assert produce_batch(ports[leader], "t", p, sent)[0] == ErrorCode.none
                written[p] += len(sent)

        for broker_id, port in ports.items():
            response = log_dirs(port)
            assert response.error_code == ErrorCode.none
            (result,) = response.results
            assert result.log_dir == re.sub("//[^@/]*@", "//", store_url)  # no user
            assert (result.total_bytes, result.usable_bytes) == (-1, -1)
            sizes = {
                p.partition_index: p.partition_size
                for t in result.topics
                if t.name == "t"
                for p in t.partitions
            }
            assert sizes == {p: written[p] for p, leader in led.items() if leader == broker_id}

        for p, leader in led.items():
            other = ports[3 - leader]
            (state,) = producers(ports[leader], "t", p)[p].active_producers
            assert (state.producer_id, state.last_sequence) == (100 + p, p)
            assert producers(other, "t", p)[p].error_code == ErrorCode.not_leader_or_follower

        described = call_once(
            brokers[1].port,
            DescribeTopicPartitionsRequest(
                topics=(DescribedTopic(name=TopicName("t")),), response_partition_limit=i32(3)
            ),
            timeout=20,
        )
        (topic,) = described.topics
        assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [
            (p, led[p]) for p in range(3)
        ]
        assert all(p.replica_nodes == p.isr_nodes == (p.leader_id,) for p in topic.partitions)
        assert (described.next_cursor.topic_name, described.next_cursor.partition_index) == ("t", 3)

        bootstrap = f"127.0.0.1:{brokers[0].port}"

        async def admin_calls() -> tuple[Any, Any]:
            admin = Admin(bootstrap)
            try:
                dirs = await admin.describe_log_dirs(partitions={"t": range(4)})
                states = await admin.describe_producers([("t", p) for p in led])
            finally:
                await admin.close()
            return dirs, states

        dirs, states = asyncio.run(admin_calls())
        merged: dict[int, int] = {}
        for found in dirs.values():
            assert not isinstance(found, KafkaError)
            for d in found:
                merged.update({p: r.size for (_t, p), r in d.replicas.items()})
        assert merged == written
        assert all(not isinstance(s, KafkaError) and len(s) == 1 for s in states.values())

        capsys.readouterr()
        assert (
            main(["log-dirs", "describe", "--bootstrap-server", bootstrap, "--output", "json"]) == 0
        )
        printed = json.loads(capsys.readouterr().out)
        assert [b["broker"] for b in printed["brokers"]] == [1, 2]
        shown = {
            p["partition"]: p["size"]
            for b in printed["brokers"]
            for d in b["logDirs"]
            for p in d["partitions"]
        }
        assert {k: v for k, v in shown.items() if k.startswith("t-")} == {
            f"t-{p}": n for p, n in written.items()
        }
