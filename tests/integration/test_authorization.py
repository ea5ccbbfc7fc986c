"""Every guarded API against the ACL it needs, on the wire, as chosen principals."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from acl_wire import STANDARD, add_acls, call_as
from kio.schema.add_offsets_to_txn.v4 import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import (
    AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV3,
)
from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV3,
)
from kio.schema.add_partitions_to_txn.v4 import (
    AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV4,
)
from kio.schema.add_partitions_to_txn.v4.request import (
    AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV4,
)
from kio.schema.add_partitions_to_txn.v4.request import AddPartitionsToTxnTransaction
from kio.schema.alter_configs.v2 import AlterConfigsRequest
from kio.schema.alter_configs.v2.request import AlterConfigsResource
from kio.schema.consumer_group_describe.v1 import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest
from kio.schema.create_acls.v3 import CreateAclsRequest
from kio.schema.create_acls.v3.request import AclCreation
from kio.schema.create_partitions.v3 import CreatePartitionsRequest
from kio.schema.create_partitions.v3.request import CreatePartitionsTopic
from kio.schema.create_topics.v7 import CreateTopicsRequest
from kio.schema.create_topics.v7.request import CreatableTopic
from kio.schema.delete_groups.v2 import DeleteGroupsRequest
from kio.schema.delete_records.v2 import DeleteRecordsRequest
from kio.schema.delete_records.v2.request import DeleteRecordsPartition, DeleteRecordsTopic
from kio.schema.delete_share_group_state.v0 import DeleteShareGroupStateRequest
from kio.schema.delete_share_group_state.v0.request import DeleteStateData
from kio.schema.delete_share_group_state.v0.request import PartitionData as DeleteStatePartition
from kio.schema.delete_topics.v5 import DeleteTopicsRequest as DeleteTopicsRequestV5
from kio.schema.delete_topics.v6 import DeleteTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.describe_acls.v3 import DescribeAclsRequest
from kio.schema.describe_cluster.v1 import DescribeClusterRequest
from kio.schema.describe_configs.v4 import DescribeConfigsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsResource
from kio.schema.describe_groups.v5 import DescribeGroupsRequest
from kio.schema.describe_transactions.v0 import DescribeTransactionsRequest
from kio.schema.end_txn.v4 import EndTxnRequest
from kio.schema.fetch.v12 import FetchRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchTopic
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest
from kio.schema.heartbeat.v4 import HeartbeatRequest
from kio.schema.incremental_alter_configs.v1 import IncrementalAlterConfigsRequest
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig as IncrementalConfig,
)
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.schema.join_group.v9 import JoinGroupRequest
from kio.schema.join_group.v9.request import JoinGroupRequestProtocol
from kio.schema.leave_group.v5 import LeaveGroupRequest
from kio.schema.leave_group.v5.request import MemberIdentity
from kio.schema.list_config_resources.v0 import ListConfigResourcesRequest
from kio.schema.list_groups.v5 import ListGroupsRequest
from kio.schema.list_offsets.v7 import ListOffsetsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.metadata.v12.request import MetadataRequestTopic
from kio.schema.offset_commit.v9 import OffsetCommitRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0 import OffsetDeleteRequest
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v5 import OffsetFetchRequest as OffsetFetchRequestV5
from kio.schema.offset_fetch.v5.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV5
from kio.schema.offset_fetch.v9 import OffsetFetchRequest
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.offset_for_leader_epoch.v4 import OffsetForLeaderEpochRequest
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.produce.v9 import ProduceRequest
from kio.schema.produce.v9.request import PartitionProduceData, TopicProduceData
from kio.schema.read_share_group_state.v0 import ReadShareGroupStateRequest
from kio.schema.read_share_group_state.v0.request import PartitionData as ReadStatePartition
from kio.schema.read_share_group_state.v0.request import ReadStateData
from kio.schema.share_fetch.v2 import ShareFetchRequest
from kio.schema.share_group_describe.v1 import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1 import ShareGroupHeartbeatRequest
from kio.schema.sync_group.v5 import SyncGroupRequest
from kio.schema.txn_offset_commit.v5 import TxnOffsetCommitRequest
from kio.schema.txn_offset_commit.v5.request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.schema.write_txn_markers.v2 import WriteTxnMarkersRequest
from kio.schema.write_txn_markers.v2.request import WritableTxnMarker, WritableTxnMarkerTopic
from kio.static.primitive import i32Timedelta

from kgroups.errors import ErrorCode
from kgroups.handlers.common import OPERATIONS_OMITTED
from kgroups.protocol.types import BrokerId, i8, i16, i32, i64
from kgroups.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

from broker_thread import BrokerThread

ALICE = "User:alice"
T = ResourceType.TOPIC
G = ResourceType.GROUP
C = ResourceType.CLUSTER
X = ResourceType.TRANSACTIONAL_ID
O = Operation  # noqa: E741
TOPIC_DENIED = ErrorCode.topic_authorization_failed
GROUP_DENIED = ErrorCode.group_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
TXN_DENIED = ErrorCode.transactional_id_authorization_failed
DENIALS = {TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED}
MS = i32Timedelta.parse(timedelta(seconds=30))


@dataclass(frozen=True)
class ApiCase:
    name: str
    request: Any
    rtype: ResourceType
    resource: str
    operation: Operation
    denied: ErrorCode
    error: Callable[[Any], ErrorCode]


def _top(r: Any) -> ErrorCode:
    return ErrorCode(r.error_code)


def _cluster_operations(r: Any) -> ErrorCode:
    """DescribeCluster answers everyone; without Cluster DESCRIBE its
    authorized-operations bits are 0, which the table counts as the denial."""
    assert r.error_code == ErrorCode.none and r.brokers
    return CLUSTER_DENIED if r.cluster_authorized_operations == 0 else ErrorCode.none


OFFSET_FETCH = OffsetFetchRequest(
    groups=(
        OffsetFetchRequestGroup(
            group_id="orders-app",
            topics=(OffsetFetchRequestTopics(name="orders", partition_indexes=(i32(0),)),),
        ),
    ),
    require_stable=False,
)

CASES = [
    ApiCase(
        "JoinGroup",
        JoinGroupRequest(
            group_id="orders-app",
            session_timeout=i32Timedelta.parse(timedelta(seconds=10)),
            rebalance_timeout=MS,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
            reason=None,
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "SyncGroup",
        SyncGroupRequest(
            group_id="orders-app",
            generation_id=i32(1),
            member_id="m",
            group_instance_id=None,
            protocol_type=None,
            protocol_name=None,
            assignments=(),
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "Heartbeat",
        HeartbeatRequest(
            group_id="orders-app", generation_id=i32(1), member_id="m", group_instance_id=None
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "LeaveGroup",
        LeaveGroupRequest(
            group_id="orders-app",
            members=(MemberIdentity(member_id="m", group_instance_id=None, reason=None),),
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "OffsetCommit",
        OffsetCommitRequest(
            group_id="orders-app",
            generation_id_or_member_epoch=i32(-1),
            member_id="",
            group_instance_id=None,
            topics=(
                OffsetCommitRequestTopic(
                    name="orders",
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=i32(0),
                            committed_offset=i64(1),
                            committed_leader_epoch=i32(-1),
                            committed_metadata=None,
                        ),
                    ),
                ),
            ),
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        lambda r: ErrorCode(r.topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "DescribeGroups",
        DescribeGroupsRequest(groups=("orders-app",), include_authorized_operations=True),
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.groups[0].error_code),
    ),
    ApiCase(
        "Produce",
        ProduceRequest(
            transactional_id=None,
            acks=i16(1),
            timeout=MS,
            topic_data=(
                TopicProduceData(
                    name="orders",
                    partition_data=(PartitionProduceData(index=i32(0), records=None),),
                ),
            ),
        ),
        T,
        "orders",
        O.WRITE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.responses[0].partition_responses[0].error_code),
    ),
    ApiCase(
        "Metadata",
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name="orders"),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=True,
        ),
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.topics[0].error_code),
    ),
    ApiCase(
        "InitProducerId transactional",
        InitProducerIdRequest(transactional_id="tx-1", transaction_timeout=MS),
        X,
        "tx-1",
        O.WRITE,
        TXN_DENIED,
        _top,
    ),
    ApiCase(
        "InitProducerId idempotent",
        InitProducerIdRequest(transactional_id=None, transaction_timeout=MS),
        C,
        CLUSTER_NAME,
        O.IDEMPOTENT_WRITE,
        CLUSTER_DENIED,
        _top,
    ),
    ApiCase(
        "EndTxn",
        EndTxnRequest(
            transactional_id="tx-1", producer_id=i64(1), producer_epoch=i16(0), committed=True
        ),
        X,
        "tx-1",
        O.WRITE,
        TXN_DENIED,
        _top,
    ),
    ApiCase(
        "AddOffsetsToTxn",
        AddOffsetsToTxnRequest(
            transactional_id="tx-1",
            producer_id=i64(1),
            producer_epoch=i16(0),
            group_id="orders-app",
        ),
        X,
        "tx-1",
        O.WRITE,
        TXN_DENIED,
        _top,
    ),
    ApiCase(
        "DescribeCluster",
        DescribeClusterRequest(include_cluster_authorized_operations=True),
        C,
        CLUSTER_NAME,
        O.DESCRIBE,
        CLUSTER_DENIED,
        _cluster_operations,
    ),
    ApiCase(
        "Fetch",
        FetchRequest(
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                FetchTopic(
                    topic="orders",
                    partitions=(
                        FetchPartition(
                            partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1024)
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        ),
        T,
        "orders",
        O.READ,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.responses[0].partitions[0].error_code),
    ),
    ApiCase(
        "Fetch follower",
        FetchRequest(
            replica_id=BrokerId(2),
            max_wait=i32Timedelta.parse(timedelta(0)),
            min_bytes=i32(0),
            topics=(
                FetchTopic(
                    topic="orders",
                    partitions=(
                        FetchPartition(
                            partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1024)
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        ),
        C,
        CLUSTER_NAME,
        O.CLUSTER_ACTION,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.responses[0].partitions[0].error_code),
    ),
    ApiCase(
        "ListOffsets",
        ListOffsetsRequest(
            replica_id=BrokerId(-1),
            isolation_level=i8(0),
            topics=(
                ListOffsetsTopic(
                    name="orders",
                    partitions=(ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),),
                ),
            ),
        ),
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "OffsetForLeaderEpoch",
        OffsetForLeaderEpochRequest(
            replica_id=BrokerId(-1),
            topics=(
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=(OffsetForLeaderPartition(partition=i32(0), leader_epoch=i32(0)),),
                ),
            ),
        ),
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "DeleteGroups",
        DeleteGroupsRequest(groups_names=("orders-app",)),
        G,
        "orders-app",
        O.DELETE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "OffsetDelete",
        OffsetDeleteRequest(
            group_id="orders-app",
            topics=(
                OffsetDeleteRequestTopic(
                    name="orders",
                    partitions=(OffsetDeleteRequestPartition(partition_index=i32(0)),),
                ),
            ),
        ),
        G,
        "orders-app",
        O.DELETE,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "FindCoordinator group",
        FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("orders-app",)),
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.coordinators[0].error_code),
    ),
    ApiCase(
        "FindCoordinator transaction",
        FindCoordinatorRequest(key_type=i8(1), coordinator_keys=("tx-1",)),
        X,
        "tx-1",
        O.DESCRIBE,
        TXN_DENIED,
        lambda r: ErrorCode(r.coordinators[0].error_code),
    ),
    ApiCase(
        "WriteTxnMarkers",
        WriteTxnMarkersRequest(
            markers=(
                WritableTxnMarker(
                    producer_id=i64(7),
                    producer_epoch=i16(0),
                    transaction_result=True,
                    topics=(WritableTxnMarkerTopic(name="orders", partition_indexes=(i32(0),)),),
                    coordinator_epoch=i32(0),
                ),
            )
        ),
        C,
        CLUSTER_NAME,
        O.CLUSTER_ACTION,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.markers[0].topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "ReadShareGroupState",
        ReadShareGroupStateRequest(
            group_id="orders-app",
            topics=(
                ReadStateData(
                    topic_id=uuid.UUID(int=1),
                    partitions=(ReadStatePartition(partition=i32(0), leader_epoch=i32(0)),),
                ),
            ),
        ),
        C,
        CLUSTER_NAME,
        O.CLUSTER_ACTION,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.results[0].partitions[0].error_code),
    ),
    ApiCase(
        "DeleteShareGroupState",
        DeleteShareGroupStateRequest(
            group_id="orders-app",
            topics=(
                DeleteStateData(
                    topic_id=uuid.UUID(int=1),
                    partitions=(DeleteStatePartition(partition=i32(0)),),
                ),
            ),
        ),
        C,
        CLUSTER_NAME,
        O.CLUSTER_ACTION,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.results[0].partitions[0].error_code),
    ),
    ApiCase(
        "CreateTopics",
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name="orders",
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=MS,
        ),
        T,
        "orders",
        O.CREATE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.topics[0].error_code),
    ),
    ApiCase(
        "DeleteTopics",
        DeleteTopicsRequest(topics=(DeleteTopicState(name="orders", topic_id=None),), timeout=MS),
        T,
        "orders",
        O.DELETE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.responses[0].error_code),
    ),
    ApiCase(
        "DeleteTopics v5",
        DeleteTopicsRequestV5(topic_names=("orders",), timeout=MS),
        T,
        "orders",
        O.DELETE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.responses[0].error_code),
    ),
    ApiCase(
        "CreatePartitions",
        CreatePartitionsRequest(
            topics=(CreatePartitionsTopic(name="orders", count=i32(2), assignments=None),),
            timeout=MS,
            validate_only=True,
        ),
        T,
        "orders",
        O.ALTER,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "DeleteRecords",
        DeleteRecordsRequest(
            topics=(
                DeleteRecordsTopic(
                    name="orders",
                    partitions=(DeleteRecordsPartition(partition_index=i32(0), offset=i64(0)),),
                ),
            ),
            timeout=MS,
        ),
        T,
        "orders",
        O.DELETE,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "DescribeConfigs topic",
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(2), resource_name="orders", configuration_keys=None
                ),
            )
        ),
        T,
        "orders",
        O.DESCRIBE_CONFIGS,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "DescribeConfigs broker",
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(4), resource_name="0", configuration_keys=None
                ),
            )
        ),
        C,
        CLUSTER_NAME,
        O.DESCRIBE_CONFIGS,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "IncrementalAlterConfigs topic",
        IncrementalAlterConfigsRequest(
            resources=(
                IncrementalResource(
                    resource_type=i8(2),
                    resource_name="orders",
                    configs=(
                        IncrementalConfig(name="retention.ms", config_operation=i8(0), value="1"),
                    ),
                ),
            ),
            validate_only=True,
        ),
        T,
        "orders",
        O.ALTER_CONFIGS,
        TOPIC_DENIED,
        lambda r: ErrorCode(r.responses[0].error_code),
    ),
    ApiCase(
        "AlterConfigs broker",
        AlterConfigsRequest(
            resources=(AlterConfigsResource(resource_type=i8(4), resource_name="", configs=()),),
            validate_only=True,
        ),
        C,
        CLUSTER_NAME,
        O.ALTER_CONFIGS,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.responses[0].error_code),
    ),
    ApiCase(
        "DescribeConfigs client metrics",
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(16), resource_name="all", configuration_keys=None
                ),
            )
        ),
        C,
        CLUSTER_NAME,
        O.DESCRIBE_CONFIGS,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "IncrementalAlterConfigs client metrics",
        IncrementalAlterConfigsRequest(
            resources=(
                IncrementalResource(
                    resource_type=i8(16),
                    resource_name="all",
                    configs=(IncrementalConfig(name="metrics", config_operation=i8(0), value="*"),),
                ),
            ),
            validate_only=True,
        ),
        C,
        CLUSTER_NAME,
        O.ALTER_CONFIGS,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.responses[0].error_code),
    ),
    ApiCase(
        "ListConfigResources",
        ListConfigResourcesRequest(),
        C,
        CLUSTER_NAME,
        O.DESCRIBE_CONFIGS,
        CLUSTER_DENIED,
        _top,
    ),
    ApiCase(
        "ConsumerGroupHeartbeat",
        ConsumerGroupHeartbeatRequest(
            group_id="orders-app",
            member_id="m1",
            member_epoch=i32(0),
            rebalance_timeout=MS,
            subscribed_topic_names=(),
            topic_partitions=(),
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "ConsumerGroupHeartbeat topics",
        ConsumerGroupHeartbeatRequest(
            group_id="orders-app",
            member_id="m1",
            member_epoch=i32(0),
            rebalance_timeout=MS,
            subscribed_topic_names=("orders",),
            topic_partitions=(),
        ),
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        _top,
    ),
    ApiCase(
        "ConsumerGroupDescribe",
        ConsumerGroupDescribeRequest(group_ids=("orders-app",), include_authorized_operations=True),
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.groups[0].error_code),
    ),
    ApiCase(
        "ShareGroupHeartbeat",
        ShareGroupHeartbeatRequest(
            group_id="orders-app", member_id="m1", member_epoch=i32(0), subscribed_topic_names=()
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "ShareGroupHeartbeat topics",
        ShareGroupHeartbeatRequest(
            group_id="orders-app",
            member_id="m1",
            member_epoch=i32(0),
            subscribed_topic_names=("orders",),
        ),
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        _top,
    ),
    ApiCase(
        "ShareGroupDescribe",
        ShareGroupDescribeRequest(group_ids=("orders-app",), include_authorized_operations=True),
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.groups[0].error_code),
    ),
    ApiCase(
        "ShareFetch",
        ShareFetchRequest(
            group_id="orders-app",
            member_id="m1",
            share_session_epoch=i32(0),
            max_wait=MS,
            min_bytes=i32(0),
            max_records=i32(10),
            batch_size=i32(10),
            topics=(),
            forgotten_topics_data=(),
        ),
        G,
        "orders-app",
        O.READ,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "TxnOffsetCommit",
        TxnOffsetCommitRequest(
            transactional_id="tx-1",
            group_id="orders-app",
            producer_id=i64(1),
            producer_epoch=i16(0),
            group_instance_id=None,
            topics=(
                TxnOffsetCommitRequestTopic(
                    name="orders",
                    partitions=(
                        TxnOffsetCommitRequestPartition(
                            partition_index=i32(0), committed_offset=i64(1), committed_metadata=None
                        ),
                    ),
                ),
            ),
        ),
        X,
        "tx-1",
        O.WRITE,
        TXN_DENIED,
        lambda r: ErrorCode(r.topics[0].partitions[0].error_code),
    ),
    ApiCase(
        "DescribeTransactions",
        DescribeTransactionsRequest(transactional_ids=("tx-1",)),
        X,
        "tx-1",
        O.DESCRIBE,
        TXN_DENIED,
        lambda r: ErrorCode(r.transaction_states[0].error_code),
    ),
    ApiCase(
        "OffsetFetch",
        OFFSET_FETCH,
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        lambda r: ErrorCode(r.groups[0].error_code),
    ),
    ApiCase(
        "OffsetFetch topics",
        OFFSET_FETCH,
        T,
        "orders",
        O.DESCRIBE,
        TOPIC_DENIED,
        lambda r: ErrorCode(
            r.groups[0].error_code or r.groups[0].topics[0].partitions[0].error_code
        ),
    ),
    ApiCase(
        "OffsetFetch v5",
        OffsetFetchRequestV5(
            group_id="orders-app",
            topics=(OffsetFetchRequestTopicV5(name="orders", partition_indexes=(i32(0),)),),
        ),
        G,
        "orders-app",
        O.DESCRIBE,
        GROUP_DENIED,
        _top,
    ),
    ApiCase(
        "AddPartitionsToTxn",
        AddPartitionsToTxnRequestV3(
            v3_and_below_transactional_id="tx-1",
            v3_and_below_producer_id=i64(1),
            v3_and_below_producer_epoch=i16(0),
            v3_and_below_topics=(AddPartitionsToTxnTopicV3(name="orders", partitions=(i32(0),)),),
        ),
        X,
        "tx-1",
        O.WRITE,
        TXN_DENIED,
        lambda r: ErrorCode(
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        ),
    ),
    ApiCase(
        "AddPartitionsToTxn topics",
        AddPartitionsToTxnRequestV3(
            v3_and_below_transactional_id="tx-1",
            v3_and_below_producer_id=i64(1),
            v3_and_below_producer_epoch=i16(0),
            v3_and_below_topics=(AddPartitionsToTxnTopicV3(name="orders", partitions=(i32(0),)),),
        ),
        T,
        "orders",
        O.WRITE,
        TOPIC_DENIED,
        lambda r: ErrorCode(
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        ),
    ),
    ApiCase(
        "AddPartitionsToTxn v4",
        AddPartitionsToTxnRequestV4(
            transactions=(
                AddPartitionsToTxnTransaction(
                    transactional_id="tx-1",
                    producer_id=i64(1),
                    producer_epoch=i16(0),
                    verify_only=True,
                    topics=(AddPartitionsToTxnTopicV4(name="orders", partitions=(i32(0),)),),
                ),
            )
        ),
        C,
        CLUSTER_NAME,
        O.CLUSTER_ACTION,
        CLUSTER_DENIED,
        _top,
    ),
    ApiCase(
        "CreateAcls",
        CreateAclsRequest(
            creations=(
                AclCreation(
                    resource_type=i8(2),
                    resource_name="x",
                    resource_pattern_type=i8(3),
                    principal="User:x",
                    host="*",
                    operation=i8(3),
                    permission_type=i8(3),
                ),
            )
        ),
        C,
        CLUSTER_NAME,
        O.ALTER,
        CLUSTER_DENIED,
        lambda r: ErrorCode(r.results[0].error_code),
    ),
    ApiCase(
        "DescribeAcls",
        DescribeAclsRequest(
            resource_type_filter=i8(1),
            resource_name_filter=None,
            pattern_type_filter=i8(1),
            principal_filter=None,
            host_filter=None,
            operation=i8(1),
            permission_type=i8(1),
        ),
        C,
        CLUSTER_NAME,
        O.DESCRIBE,
        CLUSTER_DENIED,
        _top,
    ),
]
IDS = [c.name for c in CASES]


def binding(
    case: ApiCase,
    permission: Permission = Permission.ALLOW,
    name: str | None = None,
    pattern: PatternType = PatternType.LITERAL,
    principal: str = ALICE,
    operation: Operation | None = None,
) -> AclBinding:
    return AclBinding(
        case.rtype,
        case.resource if name is None else name,
        pattern,
        principal,
        "*",
        case.operation if operation is None else operation,
        permission,
    )


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD, super_users="User:admin").start()
    try:
        yield bt
    finally:
        bt.stop()


def _extra(case: ApiCase) -> list[AclBinding]:
    """What the case needs besides its own ACL to pass the check."""
    if case.name == "OffsetFetch topics":
        return [
            AclBinding(
                G, "orders-app", PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW
            )
        ]
    if case.name == "AddPartitionsToTxn topics":
        return [AclBinding(X, "tx-1", PatternType.LITERAL, ALICE, "*", O.WRITE, Permission.ALLOW)]
    if case.name in ("ConsumerGroupHeartbeat topics", "ShareGroupHeartbeat topics"):
        return [
            AclBinding(G, "orders-app", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW)
        ]
    if case.name == "TxnOffsetCommit":
        return [
            AclBinding(G, "orders-app", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW),
            AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW),
        ]
    if case.name == "AddOffsetsToTxn":
        return [
            AclBinding(G, "orders-app", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW)
        ]
    if case.name in ("OffsetCommit", "OffsetDelete"):
        return [AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW)]
    return []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_denied_without_an_acl(broker: BrokerThread, case: ApiCase) -> None:
    if _extra(case):
        add_acls(broker, *_extra(case))
    assert case.error(call_as(broker, ALICE, case.request)) == case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_allowed_with_its_acl(broker: BrokerThread, case: ApiCase) -> None:
    add_acls(broker, binding(case), *_extra(case))
    assert case.error(call_as(broker, ALICE, case.request)) != case.denied
    assert case.error(call_as(broker, "User:bob", case.request)) in DENIALS


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_deny_overrides_allow(broker: BrokerThread, case: ApiCase) -> None:
    add_acls(
        broker,
        binding(case, operation=O.ALL),
        binding(case, Permission.DENY, name="*", principal="User:*"),
        *_extra(case),
    )
    assert case.error(call_as(broker, ALICE, case.request)) == case.denied


@pytest.mark.parametrize("case", [c for c in CASES if c.rtype != C], ids=lambda c: c.name)
def test_prefixed_and_wildcard_acls(broker: BrokerThread, case: ApiCase) -> None:
    add_acls(
        broker, binding(case, name=case.resource[:3], pattern=PatternType.PREFIXED), *_extra(case)
    )
    assert case.error(call_as(broker, ALICE, case.request)) != case.denied
    add_acls(broker, binding(case, name="*", principal="User:*"))
    assert case.error(call_as(broker, "User:bob", case.request)) != case.denied


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_super_user_needs_no_acl(broker: BrokerThread, case: ApiCase) -> None:
    assert case.error(call_as(broker, "User:admin", case.request)) != case.denied


def test_allow_everyone_if_no_acl_found(tmp_path: Path) -> None:
    bt = BrokerThread(
        tmp_path, authorizer_class_name=STANDARD, allow_everyone_if_no_acl_found="true"
    ).start()
    try:
        for case in CASES:
            assert case.error(call_as(bt, ALICE, case.request)) != case.denied, case.name
    finally:
        bt.stop()


def test_without_an_authorizer_everything_is_allowed(tmp_path: Path) -> None:
    bt = BrokerThread(tmp_path).start()
    try:
        assert bt.broker is not None and bt.broker.authorizer is None
        for case in CASES[:-2]:
            assert case.error(call_as(bt, ALICE, case.request)) != case.denied, case.name
    finally:
        bt.stop()


def test_heartbeat_on_a_connection_is_checked_after_the_acl_is_removed(tmp_path: Path) -> None:
    """The connection's heartbeat shortcut must not skip the check."""
    import socket

    from raw_wire import call

    bt = BrokerThread(tmp_path, authorizer_class_name=STANDARD).start()
    anonymous_read = AclBinding(
        G, "orders-app", PatternType.LITERAL, "User:ANONYMOUS", "*", O.READ, Permission.ALLOW
    )
    try:
        add_acls(bt, anonymous_read)
        join = CASES[0].request
        with socket.create_connection(("127.0.0.1", bt.port)) as s:
            first, _ = call(s, join)
            assert first.error_code == ErrorCode.member_id_required
            joined, _ = call(s, dataclasses.replace(join, member_id=first.member_id))
            assert joined.error_code == ErrorCode.none
            hb = HeartbeatRequest(
                group_id="orders-app",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id=None,
            )
            sync = SyncGroupRequest(
                group_id="orders-app",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=(),
            )
            assert call(s, sync)[0].error_code == ErrorCode.none
            assert call(s, hb)[0].error_code == ErrorCode.none
            assert call(s, hb)[0].error_code == ErrorCode.none

            def revoke() -> None:
                assert bt.broker is not None and bt.broker.authorizer is not None
                bt.broker.authorizer.delete(
                    AclFilter(G, None, PatternType.ANY, None, None, O.ANY, Permission.ANY)
                )

            bt.call(revoke)
            assert call(s, hb)[0].error_code == GROUP_DENIED
    finally:
        bt.stop()


def test_listings_show_only_what_the_caller_may_describe(broker: BrokerThread) -> None:
    admin = "User:admin"
    for name in ("orders", "payments"):
        create = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=MS,
        )
        assert call_as(broker, admin, create).topics[0].error_code == ErrorCode.none
    for group in ("orders-app", "payments-app"):
        commit = dataclasses.replace(CASES[4].request, group_id=group)
        assert call_as(broker, admin, commit).topics[0].partitions[0].error_code == ErrorCode.none
    add_acls(
        broker,
        AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW),
        AclBinding(G, "orders-", PatternType.PREFIXED, ALICE, "*", O.DESCRIBE, Permission.ALLOW),
    )
    everything = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=True
    )
    (topic,) = call_as(broker, ALICE, everything).topics
    assert topic.name == "orders"
    assert topic.topic_authorized_operations == (1 << O.READ) | (1 << O.DESCRIBE)
    assert {"orders", "payments"} <= {t.name for t in call_as(broker, admin, everything).topics}

    listing = ListGroupsRequest(states_filter=(), types_filter=())
    assert [g.group_id for g in call_as(broker, ALICE, listing).groups] == ["orders-app"]
    add_acls(
        broker,
        AclBinding(C, CLUSTER_NAME, PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW),
    )
    assert {g.group_id for g in call_as(broker, ALICE, listing).groups} == {
        "orders-app",
        "payments-app",
    }

    described = call_as(
        broker,
        ALICE,
        DescribeGroupsRequest(groups=("orders-app",), include_authorized_operations=True),
    )
    assert described.groups[0].authorized_operations == 1 << O.DESCRIBE
    cluster = call_as(
        broker, ALICE, DescribeClusterRequest(include_cluster_authorized_operations=True)
    )
    assert cluster.cluster_authorized_operations == 1 << O.DESCRIBE

    fetch_all = OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id="orders-app", topics=None),), require_stable=False
    )
    assert [t.name for t in call_as(broker, admin, fetch_all).groups[0].topics] == ["orders"]
    add_acls(
        broker,
        AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.DENY),
    )
    assert call_as(broker, ALICE, fetch_all).groups[0].topics == ()


def test_describe_cluster_answers_without_cluster_describe(broker: BrokerThread) -> None:
    # As in Kafka: the brokers for anyone, the operations bits only with Cluster DESCRIBE.
    for include, bits in ((True, 0), (False, OPERATIONS_OMITTED)):
        request = DescribeClusterRequest(include_cluster_authorized_operations=include)
        r = call_as(broker, ALICE, request)
        assert r.error_code == ErrorCode.none
        assert [b.port for b in r.brokers] == [broker.port]
        assert r.cluster_authorized_operations == bits


def test_metadata_auto_creates_only_with_create(broker: BrokerThread) -> None:
    ask = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="fresh"),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    add_acls(
        broker,
        AclBinding(T, "fresh", PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW),
    )
    assert call_as(broker, ALICE, ask).topics[0].error_code == TOPIC_DENIED
    everything = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    assert "fresh" not in {t.name for t in call_as(broker, "User:admin", everything).topics}
    add_acls(
        broker, AclBinding(T, "fre", PatternType.PREFIXED, ALICE, "*", O.CREATE, Permission.ALLOW)
    )
    created = call_as(broker, ALICE, ask).topics[0]
    assert created.error_code in (ErrorCode.none, ErrorCode.leader_not_available)
    assert call_as(broker, ALICE, ask).topics[0].partitions


def test_transactional_produce_needs_transactional_id_write(broker: BrokerThread) -> None:
    produce = dataclasses.replace(CASES[6].request, transactional_id="tx-1")
    assert isinstance(produce, ProduceRequest)
    topic_write = AclBinding(
        T, "orders", PatternType.LITERAL, ALICE, "*", O.WRITE, Permission.ALLOW
    )
    add_acls(broker, topic_write)
    assert CASES[6].error(call_as(broker, ALICE, produce)) == TXN_DENIED
    add_acls(
        broker, AclBinding(X, "tx-", PatternType.PREFIXED, ALICE, "*", O.WRITE, Permission.ALLOW)
    )
    assert CASES[6].error(call_as(broker, ALICE, produce)) not in DENIALS


def test_host_acls(broker: BrokerThread) -> None:
    add_acls(
        broker,
        AclBinding(
            G, "orders-app", PatternType.LITERAL, ALICE, "10.0.0.1", O.READ, Permission.ALLOW
        ),
    )
    heartbeat = CASES[2].request
    assert call_as(broker, ALICE, heartbeat, host="10.0.0.1").error_code != GROUP_DENIED
    assert call_as(broker, ALICE, heartbeat, host="10.0.0.2").error_code == GROUP_DENIED


def test_scram_credential_apis_need_cluster_describe_and_alter() -> None:
    """Guarded ahead of the APIs themselves: their handler runs only when allowed."""
    import asyncio

    from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsRequest
    from kio.schema.alter_user_scram_credentials.v0.request import ScramCredentialDeletion
    from kio.schema.describe_user_scram_credentials.v0 import DescribeUserScramCredentialsRequest

    from kgroups.handlers.access import GUARDS
    from kgroups.runtime.context import RequestContext
    from kgroups.security.authorizer import Authorizer

    async def handler(broker: object, ctx: object, body: object) -> object:
        return "handled"

    az = Authorizer(
        [AclBinding(C, CLUSTER_NAME, PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW)]
    )
    ctx = RequestContext(50, 0, 1, "c", "10.0.0.1", ALICE)
    describe = DescribeUserScramCredentialsRequest(users=None)
    assert asyncio.run(GUARDS[50](az, None, ctx, describe, handler)) == "handled"  # type: ignore[arg-type]
    alter = AlterUserScramCredentialsRequest(
        deletions=(ScramCredentialDeletion(name="bob", mechanism=i8(1)),), upsertions=()
    )
    denied = asyncio.run(GUARDS[51](az, None, ctx, alter, handler))  # type: ignore[arg-type]
    assert [(r.user, r.error_code) for r in denied.results] == [("bob", CLUSTER_DENIED)]


def test_list_transactions_shows_only_described_ids(broker: BrokerThread) -> None:
    from kio.schema.list_transactions.v1 import ListTransactionsRequest

    for txn in ("tx-1", "other-1"):
        init = InitProducerIdRequest(transactional_id=txn, transaction_timeout=MS)
        assert call_as(broker, "User:admin", init).error_code == ErrorCode.none
    listing = ListTransactionsRequest(state_filters=(), producer_id_filters=())
    add_acls(
        broker, AclBinding(X, "tx-", PatternType.PREFIXED, ALICE, "*", O.DESCRIBE, Permission.ALLOW)
    )
    assert [s.transactional_id for s in call_as(broker, ALICE, listing).transaction_states] == [
        "tx-1"
    ]
    everyone = call_as(broker, "User:admin", listing).transaction_states
    assert {s.transactional_id for s in everyone} == {"tx-1", "other-1"}


def test_a_topic_deleted_by_id_needs_delete_on_its_name(broker: BrokerThread) -> None:
    def create() -> uuid.UUID:
        assert broker.broker is not None
        return broker.broker.create_topic("orders", 1, {}).topic_id

    topic_id = broker.call(create)
    by_id = DeleteTopicsRequest(
        topics=(DeleteTopicState(name=None, topic_id=topic_id),), timeout=MS
    )
    refused = call_as(broker, ALICE, by_id).responses[0]
    assert (refused.error_code, refused.topic_id) == (TOPIC_DENIED, topic_id)
    assert broker.call(lambda: "orders" in broker.broker.topics)  # type: ignore[union-attr]

    add_acls(
        broker, AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.DELETE, Permission.ALLOW)
    )
    assert call_as(broker, ALICE, by_id).responses[0].error_code == ErrorCode.none


def test_a_group_answered_with_an_error_carries_no_authorized_operations(
    broker: BrokerThread,
) -> None:
    """Kafka fills in a described group's operations only when the group is
    answered without error."""
    add_acls(
        broker,
        AclBinding(G, "ghost", PatternType.LITERAL, ALICE, "*", O.DESCRIBE, Permission.ALLOW),
    )
    described = call_as(
        broker,
        ALICE,
        ConsumerGroupDescribeRequest(group_ids=("ghost",), include_authorized_operations=True),
    )
    (group,) = described.groups
    assert group.error_code == ErrorCode.group_id_not_found
    assert group.authorized_operations == -(2**31)


def test_offset_for_leader_epoch_answers_any_topic_with_cluster_action(
    broker: BrokerThread,
) -> None:
    """Brokers ask it of each other under CLUSTER_ACTION, consumers under Topic DESCRIBE."""
    case = next(c for c in CASES if c.name == "OffsetForLeaderEpoch")
    add_acls(
        broker,
        AclBinding(
            C, CLUSTER_NAME, PatternType.LITERAL, ALICE, "*", O.CLUSTER_ACTION, Permission.ALLOW
        ),
    )
    assert case.error(call_as(broker, ALICE, case.request)) not in DENIALS


def test_share_fetch_answers_a_topic_it_may_not_read_with_a_denial(broker: BrokerThread) -> None:
    from kio.schema.share_fetch.v2.request import FetchPartition, FetchTopic

    admin = "User:admin"
    for name in ("orders", "payments"):
        create = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=MS,
        )
        assert call_as(broker, admin, create).topics[0].error_code == ErrorCode.none
    everything = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    ids = {t.name: t.topic_id for t in call_as(broker, admin, everything).topics}
    add_acls(
        broker,
        AclBinding(G, "orders-app", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW),
        AclBinding(T, "orders", PatternType.LITERAL, ALICE, "*", O.READ, Permission.ALLOW),
    )
    fetch = ShareFetchRequest(
        group_id="orders-app",
        member_id="m1",
        share_session_epoch=i32(0),
        max_wait=i32Timedelta.parse(timedelta(0)),
        min_bytes=i32(0),
        max_records=i32(10),
        batch_size=i32(10),
        topics=tuple(
            FetchTopic(
                topic_id=ids[name],
                partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=()),),
            )
            for name in ("orders", "payments")
        ),
        forgotten_topics_data=(),
    )
    answer = call_as(broker, ALICE, fetch)
    assert answer.error_code == ErrorCode.none
    errors = {t.topic_id: t.partitions[0].error_code for t in answer.responses}
    assert errors == {ids["orders"]: ErrorCode.none, ids["payments"]: TOPIC_DENIED}
