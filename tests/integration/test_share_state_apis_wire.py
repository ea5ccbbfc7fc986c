"""The share coordinator's APIs on the wire, on a broker alone: what a
share-partition leader and the group coordinator send it (Kafka 4.2's
InitializeShareGroupState, WriteShareGroupState, ReadShareGroupState,
ReadShareGroupStateSummary, DeleteShareGroupState), FindCoordinator with
key type SHARE naming it, ApiVersions listing the APIs, and the state kept
across a restart."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_brokers import create_topic, metadata
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.schema.delete_share_group_state.v0 import DeleteShareGroupStateRequest
from kio.schema.delete_share_group_state.v0 import request as delete_wire
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.initialize_share_group_state.v0 import InitializeShareGroupStateRequest
from kio.schema.initialize_share_group_state.v0 import request as init_wire
from kio.schema.read_share_group_state.v0 import ReadShareGroupStateRequest
from kio.schema.read_share_group_state.v0 import request as read_wire
from kio.schema.read_share_group_state_summary.v1 import ReadShareGroupStateSummaryRequest
from kio.schema.read_share_group_state_summary.v1 import request as summary_wire
from kio.schema.write_share_group_state.v1 import WriteShareGroupStateRequest
from kio.schema.write_share_group_state.v1 import request as write_wire

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8, i16, i32, i64

from broker_thread import BrokerThread
from raw_wire import call_once

GROUP = "jobs"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


def _topic(broker: BrokerThread) -> uuid.UUID:
    assert create_topic(broker.port, "t", 2) is ErrorCode.none
    topic_id: uuid.UUID = metadata(broker.port, "t").topics[0].topic_id
    return topic_id


def initialize(port: int, topic_id: uuid.UUID, state_epoch: int, start: int) -> Any:
    request = InitializeShareGroupStateRequest(
        group_id=GROUP,
        topics=(
            init_wire.InitializeStateData(
                topic_id=topic_id,
                partitions=(
                    init_wire.PartitionData(
                        partition=i32(0), state_epoch=i32(state_epoch), start_offset=i64(start)
                    ),
                ),
            ),
        ),
    )
    return call_once(port, request).results[0].partitions[0]


def write(
    port: int, topic_id: uuid.UUID, state_epoch: int, leader_epoch: int, start: int, *batches: Any
) -> Any:
    request = WriteShareGroupStateRequest(
        group_id=GROUP,
        topics=(
            write_wire.WriteStateData(
                topic_id=topic_id,
                partitions=(
                    write_wire.PartitionData(
                        partition=i32(0),
                        state_epoch=i32(state_epoch),
                        leader_epoch=i32(leader_epoch),
                        start_offset=i64(start),
                        state_batches=tuple(
                            write_wire.StateBatch(
                                first_offset=i64(f),
                                last_offset=i64(last),
                                delivery_state=i8(state),
                                delivery_count=i16(count),
                            )
                            for f, last, state, count in batches
                        ),
                    ),
                ),
            ),
        ),
    )
    return call_once(port, request).results[0].partitions[0]


def read(port: int, topic_id: uuid.UUID, leader_epoch: int) -> Any:
    request = ReadShareGroupStateRequest(
        group_id=GROUP,
        topics=(
            read_wire.ReadStateData(
                topic_id=topic_id,
                partitions=(
                    read_wire.PartitionData(partition=i32(0), leader_epoch=i32(leader_epoch)),
                ),
            ),
        ),
    )
    return call_once(port, request).results[0].partitions[0]


def summary(port: int, topic_id: uuid.UUID) -> Any:
    request = ReadShareGroupStateSummaryRequest(
        group_id=GROUP,
        topics=(
            summary_wire.ReadStateSummaryData(
                topic_id=topic_id,
                partitions=(summary_wire.PartitionData(partition=i32(0), leader_epoch=i32(0)),),
            ),
        ),
    )
    return call_once(port, request).results[0].partitions[0]


def delete(port: int, topic_id: uuid.UUID) -> Any:
    request = DeleteShareGroupStateRequest(
        group_id=GROUP,
        topics=(
            delete_wire.DeleteStateData(
                topic_id=topic_id, partitions=(delete_wire.PartitionData(partition=i32(0)),)
            ),
        ),
    )
    return call_once(port, request).results[0].partitions[0]


def test_initialize_write_read_summary_and_delete(broker: BrokerThread) -> None:
    topic_id = _topic(broker)
    port = broker.port
    never = summary(port, topic_id)
    assert (never.error_code, never.start_offset, never.delivery_complete_count) == (
        ErrorCode.none,
        -1,
        -1,
    )
    unread = read(port, topic_id, 0)
    assert unread.error_code is ErrorCode.invalid_request
    assert unread.error_message == "Read operation on uninitialized share partition not allowed."

    assert initialize(port, topic_id, 1, 0).error_code is ErrorCode.none
    assert write(port, topic_id, 1, 0, 0, (0, 2, 2, 1), (3, 4, 0, 2)).error_code is ErrorCode.none
    state = read(port, topic_id, 3)  # a new leader: epoch 3 recorded
    assert (state.error_code, state.state_epoch, state.start_offset) == (ErrorCode.none, 1, 0)
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in state.state_batches
    ] == [
        (0, 2, 2, 1),
        (3, 4, 0, 2),
    ]
    assert write(port, topic_id, 1, 2, 0).error_code is ErrorCode.fenced_leader_epoch
    assert write(port, topic_id, 0, 3, 0).error_code is ErrorCode.fenced_state_epoch
    kept = summary(port, topic_id)
    assert (kept.state_epoch, kept.leader_epoch, kept.start_offset) == (1, 3, 0)
    assert kept.delivery_complete_count == 3

    assert delete(port, topic_id).error_code is ErrorCode.none
    assert summary(port, topic_id).start_offset == -1


def test_the_state_is_loaded_again_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerThread(data, share_coordinator_snapshot_update_records_per_snapshot=2).start()
    try:
        topic_id = _topic(broker)
        assert initialize(broker.port, topic_id, 4, 10).error_code is ErrorCode.none
        for start in range(10, 16):  # updates, then a snapshot, then updates
            batch = (start, start, 2, 1)
            assert write(broker.port, topic_id, 4, 0, start, batch).error_code is ErrorCode.none
    finally:
        broker.stop()
    broker = BrokerThread(data).start()
    try:
        state = read(broker.port, topic_id, 1)
        while state.error_code is ErrorCode.coordinator_load_in_progress:
            state = read(broker.port, topic_id, 1)
        assert (state.error_code, state.state_epoch, state.start_offset) == (ErrorCode.none, 4, 15)
        assert [(b.first_offset, b.last_offset) for b in state.state_batches] == [(15, 15)]
    finally:
        broker.stop()


def test_a_request_with_no_group_id_or_no_partition(broker: BrokerThread) -> None:
    topic_id = _topic(broker)
    empty = ReadShareGroupStateSummaryRequest(
        group_id="",
        topics=(
            summary_wire.ReadStateSummaryData(
                topic_id=topic_id,
                partitions=(summary_wire.PartitionData(partition=i32(0), leader_epoch=i32(0)),),
            ),
        ),
    )
    assert call_once(broker.port, empty).results == ()
    no_partition = DeleteShareGroupStateRequest(
        group_id=GROUP, topics=(delete_wire.DeleteStateData(topic_id=topic_id, partitions=()),)
    )
    assert call_once(broker.port, no_partition).results == ()


def test_find_coordinator_names_the_broker_for_a_share_key(broker: BrokerThread) -> None:
    topic_id = _topic(broker)
    kafka_id = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    response = call_once(
        broker.port,
        FindCoordinatorRequest(
            key_type=i8(2), coordinator_keys=(f"{GROUP}:{kafka_id}:0", "not-a-share-key")
        ),
    )
    found, bad = response.coordinators
    assert (found.error_code, found.node_id, found.port) == (ErrorCode.none, 0, broker.port)
    assert bad.error_code is ErrorCode.invalid_request


def test_api_versions_lists_the_share_state_apis(broker: BrokerThread) -> None:
    response = call_once(
        broker.port,
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
    )
    ranges = {int(e.api_key): (int(e.min_version), int(e.max_version)) for e in response.api_keys}
    assert ranges[83] == (0, 0)
    assert ranges[84] == (0, 0)
    assert ranges[85] == (0, 1)
    assert ranges[86] == (0, 0)
    assert ranges[87] == (0, 1)
