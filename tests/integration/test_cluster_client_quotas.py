"""Client quotas in a cluster: set through one broker, kept in the store,
described and enforced by every broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import cast

from client_quota_wire import alter, describe
from cluster_brokers import TIMEOUT, create_topic, leaders, running_cluster, wait_for
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.static.primitive import Records

from kgroups.errors import ErrorCode
from kgroups.protocol.types import TopicName, i16, i32
from kgroups.records.batch import encode_batch

from raw_wire import call_once

# The raw requests' client id.
CLIENT = (("client-id", "t"),)


def _throttle_ms(port: int, topic: str) -> int:
    """Produce 100 kB with acks=all; the throttle time of the answer."""
    batch = encode_batch([(None, b"x" * 100_000, (), int(time.time() * 1000))])
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=TIMEOUT,
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(PartitionProduceData(index=i32(0), records=cast(Records, batch)),),
            ),
        ),
    )
    response = call_once(port, request, timeout=20)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    return int(response.throttle_time.total_seconds() * 1000)


def test_a_quota_set_on_one_broker_is_enforced_by_another(tmp_path: Path, store_url: str) -> None:
    with running_cluster(tmp_path, store_url, 2) as brokers:
        ports = {1: brokers[0].port, 2: brokers[1].port}
        assert create_topic(ports[1], "q", 1) == ErrorCode.none
        leader = leaders(ports[1], "q")[0]
        other = 3 - leader
        assert _throttle_ms(ports[leader], "q") == 0
        assert alter(ports[other], [(CLIENT, [("producer_byte_rate", 1000)])]) == [
            (ErrorCode.none, None)
        ]
        wait_for(lambda: describe(ports[leader]) == {CLIENT: {"producer_byte_rate": 1000.0}})
        # The leader took the quota from the store: 100 kB at 1 kB/s is throttled.
        wait_for(lambda: _throttle_ms(ports[leader], "q") > 0)
        assert alter(ports[leader], [(CLIENT, [("producer_byte_rate", None)])]) == [
            (ErrorCode.none, None)
        ]
        wait_for(lambda: describe(ports[other]) == {})
