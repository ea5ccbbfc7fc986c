"""The API-version table: which requests kgroups serves, and in which versions.

Ranges start where kio's schemas start (Kafka 4.0 dropped the same old versions,
KIP-896) and stop where kgroups implements the semantics: Fetch stops at v12
because v13+ addresses topics by id only, Produce at v9 for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from io import BytesIO
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_writer

from kgroups.protocol.bounds import bounded_reader
from kgroups.protocol.produce_response import produce_response_encoder


@dataclass(frozen=True, slots=True)
class ApiRange:
    key: int
    name: str
    min_version: int
    max_version: int


PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
SASL_HANDSHAKE = 17
API_VERSIONS = 18
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
INIT_PRODUCER_ID = 22
OFFSET_FOR_LEADER_EPOCH = 23
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
WRITE_TXN_MARKERS = 27
TXN_OFFSET_COMMIT = 28
DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
DESCRIBE_LOG_DIRS = 35
SASL_AUTHENTICATE = 36
CREATE_PARTITIONS = 37
DELETE_GROUPS = 42
INCREMENTAL_ALTER_CONFIGS = 44
OFFSET_DELETE = 47
DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51
DESCRIBE_CLUSTER = 60
DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
GET_TELEMETRY_SUBSCRIPTIONS = 71
PUSH_TELEMETRY = 72
LIST_CONFIG_RESOURCES = 74
DESCRIBE_TOPIC_PARTITIONS = 75
INITIALIZE_SHARE_GROUP_STATE = 83
READ_SHARE_GROUP_STATE = 84
WRITE_SHARE_GROUP_STATE = 85
DELETE_SHARE_GROUP_STATE = 86
READ_SHARE_GROUP_STATE_SUMMARY = 87
SHARE_GROUP_HEARTBEAT = 76
SHARE_GROUP_DESCRIBE = 77
SHARE_FETCH = 78
SHARE_ACKNOWLEDGE = 79
DESCRIBE_SHARE_GROUP_OFFSETS = 90
ALTER_SHARE_GROUP_OFFSETS = 91
DELETE_SHARE_GROUP_OFFSETS = 92

SUPPORTED: dict[int, ApiRange] = {
    r.key: r
    for r in (
        ApiRange(PRODUCE, "Produce", 3, 9),
        ApiRange(FETCH, "Fetch", 4, 12),
        ApiRange(LIST_OFFSETS, "ListOffsets", 1, 7),
        ApiRange(METADATA, "Metadata", 0, 12),
        ApiRange(OFFSET_COMMIT, "OffsetCommit", 2, 9),
        ApiRange(OFFSET_FETCH, "OffsetFetch", 1, 9),
        ApiRange(FIND_COORDINATOR, "FindCoordinator", 0, 4),
        ApiRange(JOIN_GROUP, "JoinGroup", 0, 9),
        ApiRange(HEARTBEAT, "Heartbeat", 0, 4),
        ApiRange(LEAVE_GROUP, "LeaveGroup", 0, 5),
        ApiRange(SYNC_GROUP, "SyncGroup", 0, 5),
        ApiRange(DESCRIBE_GROUPS, "DescribeGroups", 0, 6),
        ApiRange(LIST_GROUPS, "ListGroups", 0, 5),
        ApiRange(SASL_HANDSHAKE, "SaslHandshake", 0, 1),
        ApiRange(API_VERSIONS, "ApiVersions", 0, 3),
        ApiRange(CREATE_TOPICS, "CreateTopics", 2, 7),
        ApiRange(DELETE_TOPICS, "DeleteTopics", 1, 6),
        ApiRange(DELETE_RECORDS, "DeleteRecords", 0, 2),
        ApiRange(INIT_PRODUCER_ID, "InitProducerId", 0, 4),
        ApiRange(OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 2, 4),
        # AddPartitionsToTxn v5 and EndTxn v5 are transaction.version 2
        # (KIP-890 part 2), which is not served: clients keep to v4.
        ApiRange(ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 4),
        ApiRange(ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 4),
        ApiRange(END_TXN, "EndTxn", 0, 4),
        ApiRange(WRITE_TXN_MARKERS, "WriteTxnMarkers", 1, 2),
        ApiRange(TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 5),
        ApiRange(DESCRIBE_ACLS, "DescribeAcls", 1, 3),
        ApiRange(CREATE_ACLS, "CreateAcls", 1, 3),
        ApiRange(DELETE_ACLS, "DeleteAcls", 1, 3),
        ApiRange(DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4),
        ApiRange(ALTER_CONFIGS, "AlterConfigs", 0, 2),
        # v5 flags cordoned log directories (not in Kafka 4.0); kgroups has none.
        ApiRange(DESCRIBE_LOG_DIRS, "DescribeLogDirs", 1, 4),
        ApiRange(SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2),
        ApiRange(CREATE_PARTITIONS, "CreatePartitions", 0, 3),
        ApiRange(DELETE_GROUPS, "DeleteGroups", 0, 2),
        ApiRange(INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1),
        ApiRange(OFFSET_DELETE, "OffsetDelete", 0, 0),
        ApiRange(DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1),
        ApiRange(ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1),
        ApiRange(DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0),
        ApiRange(ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0),
        ApiRange(DESCRIBE_CLUSTER, "DescribeCluster", 0, 1),
        ApiRange(DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0),
        ApiRange(DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0),
        ApiRange(LIST_TRANSACTIONS, "ListTransactions", 0, 2),
        ApiRange(CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeat", 0, 1),
        ApiRange(CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", 0, 1),
        ApiRange(GET_TELEMETRY_SUBSCRIPTIONS, "GetTelemetrySubscriptions", 0, 0),
        ApiRange(PUSH_TELEMETRY, "PushTelemetry", 0, 0),
        # v0 is Kafka 4.0's ListClientMetricsResources (the names of the
        # client metrics subscriptions); v1 (KIP-1142) is not served, and
        # clients list subscriptions with v0.
        ApiRange(LIST_CONFIG_RESOURCES, "ListConfigResources", 0, 0),
        ApiRange(DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions", 0, 0),
        # Share groups (KIP-932): the versions Kafka 4.2 serves (v0, 4.0's early
        # access, was removed in 4.1; v2 of the fetch and acknowledge adds RENEW).
        ApiRange(SHARE_GROUP_HEARTBEAT, "ShareGroupHeartbeat", 1, 1),
        ApiRange(SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", 1, 1),
        ApiRange(SHARE_FETCH, "ShareFetch", 1, 2),
        ApiRange(SHARE_ACKNOWLEDGE, "ShareAcknowledge", 1, 2),
        ApiRange(DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets", 0, 1),
        ApiRange(ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", 0, 0),
        ApiRange(DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsets", 0, 0),
        # The share coordinator's APIs, sent between brokers (Kafka 4.2's
        # versions; v1 of the write and the summary carry KIP-1226's count).
        ApiRange(INITIALIZE_SHARE_GROUP_STATE, "InitializeShareGroupState", 0, 0),
        ApiRange(READ_SHARE_GROUP_STATE, "ReadShareGroupState", 0, 0),
        ApiRange(WRITE_SHARE_GROUP_STATE, "WriteShareGroupState", 0, 1),
        ApiRange(DELETE_SHARE_GROUP_STATE, "DeleteShareGroupState", 0, 0),
        ApiRange(READ_SHARE_GROUP_STATE_SUMMARY, "ReadShareGroupStateSummary", 0, 1),
    )
}


def is_supported(api_key: int, api_version: int) -> bool:
    r = SUPPORTED.get(api_key)
    return r is not None and r.min_version <= api_version <= r.max_version


# Small responses that repeat byte for byte (a heartbeat's NONE, a commit's
# per-partition NONEs, a stable consumer-group member's epoch) are encoded
# once: kio entities are frozen and hashable, so an equal response finds its
# bytes. Responses that carry data (records,
# metadata) are neither small nor repeated, and are not kept.
_REPEATING = frozenset(
    {OFFSET_COMMIT, FIND_COORDINATOR, HEARTBEAT, CONSUMER_GROUP_HEARTBEAT, API_VERSIONS}
)
_ENCODED_CACHE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class ApiCodec:
    """Everything needed to read one request version and write its response."""

    request_type: type[Any]
    response_type: type[Any]
    request_header_flexible: bool
    response_header_flexible: bool
    # Refuses lengths the frame cannot hold (bounds.LengthOutOfBounds) before
    # kio would allocate them.
    read_request: Any
    write_response: Any
    # Encoded responses by value, for APIs whose responses repeat (see _REPEATING).
    encoded: dict[object, bytes] | None = None
    # An encoder of the response's own, where kio's writer is too slow for a
    # response of many entries (Produce: protocol/produce_response.py).
    encode_fast: Callable[[Any], bytes] | None = None

    def encode_response(self, response: object) -> bytes:
        if self.encode_fast is not None:
            return self.encode_fast(response)
        if self.encoded is not None:
            try:
                payload = self.encoded.get(response)
            except TypeError:  # a field that is not hashable: encode it every time
                return self._encode(response)
            if payload is None:
                if len(self.encoded) >= _ENCODED_CACHE_SIZE:
                    self.encoded.clear()
                payload = self.encoded[response] = self._encode(response)
            return payload
        return self._encode(response)

    def _encode(self, response: object) -> bytes:
        buf = BytesIO()
        self.write_response(buf, response)
        return buf.getvalue()


@cache
def codec(api_key: int, api_version: int) -> ApiCodec:
    request_type = load_request_schema(api_key, api_version)
    response_type = load_response_schema(api_key, api_version)
    return ApiCodec(
        request_type=request_type,
        response_type=response_type,
        request_header_flexible=request_type.__header_schema__.__version__ >= 2,
        response_header_flexible=response_type.__header_schema__.__version__ >= 1,
        read_request=bounded_reader(request_type),
        write_response=entity_writer(response_type),
        encoded={} if api_key in _REPEATING else None,
        encode_fast=produce_response_encoder(api_version) if api_key == PRODUCE else None,
    )


@cache
def newest(api_key: int) -> ApiCodec:
    return codec(api_key, SUPPORTED[api_key].max_version)
