"""A share group in a cluster of three brokers, with kgroups' ShareConsumer:
the group's members fetch each partition at the broker leading it (three
brokers, one partition each), and every record is processed once; a
ShareFetch at another broker is told where the leader is; offsets an admin
moves back are read again from there at every leader."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from pathlib import Path

from cluster_brokers import create_topic, leaders, metadata, produce, running_cluster, wait_for
from config_admin_wire import SET, configs, incremental
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_fetch.v2.request import FetchPartition, FetchTopic
from kio.static.primitive import i32Timedelta

from kgroups.client.admin import Admin
from kgroups.client.share_consumer import ShareConsumer
from kgroups.errors import ErrorCode
from kgroups.protocol.types import GroupId, i32

from raw_wire import call_once

TOPIC = "jobs"
GROUP = "workers"
GROUP_RESOURCE = 32


def test_a_share_group_consumes_partitions_led_by_three_brokers(
    tmp_path: Path, store_url: str
) -> None:
    with running_cluster(
        tmp_path,
        store_url,
        3,
        "group.share.heartbeat.interval.ms=200",
        "group.share.min.heartbeat.interval.ms=100",
    ) as brokers:
        port_of = {i + 1: b.port for i, b in enumerate(brokers)}
        assert create_topic(brokers[0].port, TOPIC, 3) is ErrorCode.none
        led = leaders(brokers[0].port, TOPIC)
        assert sorted(led.values()) == [1, 2, 3]  # one partition per broker
        reset = [("share.auto.offset.reset", SET, "earliest")]
        assert (
            incremental(brokers[0].port, [(GROUP_RESOURCE, GROUP, reset)])[0][1] is ErrorCode.none
        )
        for b in brokers:  # every broker has read the group's config from the store
            wait_for(
                lambda b=b: (
                    configs(b.port, GROUP_RESOURCE, GROUP).get(
                        "share.auto.offset.reset", (None, 0)
                    )[0]
                    == "earliest"
                )
            )
        expected = {f"job-{p}-{i}".encode() for p in range(3) for i in range(50)}
        for p in range(3):
            values = sorted(v for v in expected if v.startswith(f"job-{p}-".encode()))
            assert produce(port_of[led[p]], TOPIC, p, *values)[0] is ErrorCode.none

        # Partition 0 fetched at a broker that does not lead it.
        other = next(i for i in port_of if i != led[0])
        topic_id = metadata(brokers[0].port, TOPIC).topics[0].topic_id
        misdirected = call_once(port_of[other], _share_fetch(topic_id))
        (answer,) = misdirected.responses[0].partitions
        assert answer.error_code is ErrorCode.not_leader_or_follower
        assert answer.current_leader.leader_id == led[0]
        assert [(e.node_id, e.port) for e in misdirected.node_endpoints] == [
            (led[0], port_of[led[0]])
        ]

        bootstrap = ",".join(b.bootstrap for b in brokers)
        consumers = []
        for i in range(2):
            consumer = ShareConsumer(
                {"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": f"w{i}"}
            )
            consumer.subscribe([TOPIC])
            consumers.append(consumer)
        try:
            processed: list[bytes] = []
            deadline = time.monotonic() + 60
            while len(processed) < len(expected):
                assert time.monotonic() < deadline, len(processed)
                for consumer in consumers:
                    for record in consumer.poll(0.1):
                        assert record.delivery_count == 1
                        processed.append(record.value or b"")
            assert sorted(processed) == sorted(expected)  # each once
            for consumer in consumers:  # accepted at this poll: nothing comes again
                assert consumer.poll(0.3) == []
        finally:
            for consumer in consumers:
                consumer.close()

        # Every share partition's lag, from any broker: nothing is left to do,
        # on partitions the coordinator's broker does not lead too.
        async def offsets() -> list[tuple[int, int, int | None]]:
            admin = Admin(bootstrap)
            try:
                found = await admin.describe_share_group_offsets(GROUP)
            finally:
                await admin.close()
            return sorted((o.partition, o.start_offset, o.lag) for o in found)

        assert asyncio.run(offsets()) == [(p, 50, 0) for p in range(3)]

        # An admin moves the empty group back to the start, through the group
        # coordinator's broker: the leaders of the other partitions, which
        # still hold their share partitions, must not go on from 50.
        async def rewind() -> None:
            admin = Admin(bootstrap)
            try:
                await admin.alter_share_group_offsets(GROUP, {(TOPIC, p): 0 for p in range(3)})
            finally:
                await admin.close()

        asyncio.run(rewind())
        assert asyncio.run(offsets()) == [(p, 0, 50) for p in range(3)]
        assert _read_all(bootstrap, len(expected)) == sorted(expected)

        # Deleted offsets: the next member starts where share.auto.offset.reset
        # says (earliest), again at every leader.
        async def delete() -> None:
            admin = Admin(bootstrap)
            try:
                assert await admin.delete_share_group_offsets(GROUP, [TOPIC]) == {TOPIC: None}
            finally:
                await admin.close()

        asyncio.run(delete())
        assert _read_all(bootstrap, len(expected)) == sorted(expected)


def _read_all(bootstrap: str, count: int) -> list[bytes]:
    """What one new member of the group reads until it has ``count`` records."""
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    consumer.subscribe([TOPIC])
    try:
        processed: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(processed) < count:
            assert time.monotonic() < deadline, sorted(processed)[:5]
            processed += [record.value or b"" for record in consumer.poll(0.1)]
        return sorted(processed)
    finally:
        consumer.close()


def _share_fetch(topic_id: uuid.UUID) -> ShareFetchRequest:
    return ShareFetchRequest(
        group_id=GroupId(GROUP),
        member_id="m1",
        share_session_epoch=i32(0),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        max_records=i32(500),
        batch_size=i32(500),
        is_renew_ack=False,
        topics=(
            FetchTopic(
                topic_id=topic_id,
                partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=()),),
            ),
        ),
        forgotten_topics_data=(),
    )
