"""Every version of the broker's own APIs, spoken on the wire."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any, cast
from uuid import UUID

from kio.index import load_request_schema
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records

from kgroups.client.connection import BrokerConnection
from kgroups.errors import ErrorCode
from kgroups.protocol import apis
from kgroups.protocol.types import BrokerId, ProducerId, TopicName, i8, i16, i32, i64
from kgroups.protocol.versions import build
from kgroups.records.batch import decode_records, encode_batch, iter_batches

from broker_thread import BrokerThread

TIMEOUT = timedelta(seconds=10)


def _request(api_key: int, version: int, **fields: Any) -> Any:
    return build(load_request_schema(api_key, version), **fields)


def _versions(api_key: int) -> range:
    r = apis.SUPPORTED[api_key]
    return range(r.min_version, r.max_version + 1)


async def _scenario(bootstrap: str) -> None:
    host, port = bootstrap.split(":")
    conn = await BrokerConnection.open(host, int(port))

    async def send(api_key: int, version: int, **fields: Any) -> Any:
        return await conn.send(_request(api_key, version, **fields))

    for v in _versions(apis.API_VERSIONS):
        r = await send(apis.API_VERSIONS, v, client_software_name="t", client_software_version="1")
        assert r.error_code == ErrorCode.none
        # Without metrics.port nobody receives client telemetry: not advertised.
        telemetry = {apis.GET_TELEMETRY_SUBSCRIPTIONS, apis.PUSH_TELEMETRY}
        assert {a.api_key for a in r.api_keys} == set(apis.SUPPORTED) - telemetry

    for v in _versions(apis.CREATE_TOPICS):
        name = f"topic-v{v}"
        r = await send(
            apis.CREATE_TOPICS,
            v,
            timeout=TIMEOUT,
            validate_only=False,
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(2),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
        )
        assert r.topics[0].error_code == ErrorCode.none, (v, r)

    for v in _versions(apis.METADATA):
        topics = (MetadataRequestTopic(topic_id=None, name=TopicName("topic-v2")),)
        r = await send(
            apis.METADATA,
            v,
            topics=topics,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
            include_cluster_authorized_operations=False,
        )
        assert [(t.name, len(t.partitions)) for t in r.topics] == [("topic-v2", 2)], v
        assert r.brokers[0].port == int(port)

    for v in _versions(apis.INIT_PRODUCER_ID):
        r = await send(
            apis.INIT_PRODUCER_ID,
            v,
            transactional_id=None,
            transaction_timeout=TIMEOUT,
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        )
        assert r.error_code == ErrorCode.none and r.producer_id >= 0

    for v in _versions(apis.PRODUCE):
        batch = encode_batch([(b"k", f"produce-v{v}".encode(), (), 1_700_000_000_000 + v)])
        r = await send(
            apis.PRODUCE,
            v,
            transactional_id=None,
            acks=i16(-1),
            timeout=TIMEOUT,
            topic_data=(
                TopicProduceData(
                    name=TopicName("topic-v2"),
                    partition_data=(
                        PartitionProduceData(index=i32(0), records=cast(Records, batch)),
                    ),
                ),
            ),
        )
        p = r.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset) == (ErrorCode.none, v - 3), v

    for v in _versions(apis.FETCH):
        r = await send(
            apis.FETCH,
            v,
            replica_id=BrokerId(-1),
            max_wait=timedelta(0),
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            isolation_level=i8(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            forgotten_topics_data=(),
            rack_id="",
            topics=(
                FetchTopic(
                    topic=TopicName("topic-v2"),
                    partitions=(
                        FetchPartition(
                            partition=i32(0), fetch_offset=i64(2), partition_max_bytes=i32(1 << 20)
                        ),
                    ),
                ),
            ),
        )
        p = r.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (ErrorCode.none, 7), v
        data = p.records or b""
        values = [
            rec.value
            for pos, h in iter_batches(data)
            for rec in decode_records(data[pos : pos + h.size])
        ]
        assert values == [f"produce-v{n}".encode() for n in range(5, 10)], v

    for v in _versions(apis.LIST_OFFSETS):
        for ts, expected in ((-1, 7), (-2, 0), (1_700_000_000_006, 3)):
            r = await send(
                apis.LIST_OFFSETS,
                v,
                replica_id=BrokerId(-1),
                isolation_level=i8(0),
                topics=(
                    ListOffsetsTopic(
                        name=TopicName("topic-v2"),
                        partitions=(
                            ListOffsetsPartition(
                                partition_index=i32(0),
                                current_leader_epoch=i32(-1),
                                timestamp=i64(ts),
                            ),
                        ),
                    ),
                ),
            )
            p = r.topics[0].partitions[0]
            assert (p.error_code, p.offset) == (ErrorCode.none, expected), (v, ts)

    for v in _versions(apis.OFFSET_FOR_LEADER_EPOCH):
        m = importlib.import_module(f"kio.schema.offset_for_leader_epoch.v{v}.request")
        partition = build(
            m.OffsetForLeaderPartition,
            partition=i32(0),
            current_leader_epoch=i32(0),
            leader_epoch=i32(0),
        )
        r = await send(
            apis.OFFSET_FOR_LEADER_EPOCH,
            v,
            replica_id=BrokerId(-1),
            topics=(
                build(m.OffsetForLeaderTopic, topic=TopicName("topic-v2"), partitions=(partition,)),
            ),
        )
        p = r.topics[0].partitions[0]
        assert (p.error_code, p.leader_epoch, p.end_offset) == (ErrorCode.none, 0, 7), v

    for v in _versions(apis.DESCRIBE_CONFIGS):
        r = await send(
            apis.DESCRIBE_CONFIGS,
            v,
            include_synonyms=False,
            include_documentation=False,
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(2), resource_name="topic-v2", configuration_keys=None
                ),
            ),
        )
        configs = {c.name: c.value for c in r.results[0].configs}
        assert configs["cleanup.policy"] == "delete", v

    for v in _versions(apis.DESCRIBE_CLUSTER):
        r = await send(apis.DESCRIBE_CLUSTER, v, include_cluster_authorized_operations=False)
        assert r.error_code == ErrorCode.none and r.brokers[0].port == int(port)

    for v in _versions(apis.DELETE_TOPICS):
        name = f"topic-v{v + 1}"
        r = await send(
            apis.DELETE_TOPICS,
            v,
            timeout=TIMEOUT,
            topic_names=(TopicName(name),),
            topics=(DeleteTopicState(name=TopicName(name), topic_id=UUID(int=0)),),
        )
        result = r.responses[0]
        assert (result.name, result.error_code) == (name, ErrorCode.none), v
    await conn.close()


def test_broker_apis_at_every_version(broker: BrokerThread) -> None:
    broker.run(_scenario(broker.bootstrap))
