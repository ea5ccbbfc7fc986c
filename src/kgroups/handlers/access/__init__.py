"""What each API requires of the caller's ACLs, in one table (Kafka's checks,
Kafka's error codes); the guards themselves are grouped by family.

Dispatch consults GUARDS only when an authorizer is configured. A guard gets
the request and the handler; it answers a denial itself, trims the request to
what the caller may touch, or trims the handler's answer to what the caller may
see (Metadata, ListGroups, DescribeGroups).
"""

from __future__ import annotations

from kgroups.handlers.access import cluster, groups, share, share_state, topics, transactions
from kgroups.handlers.access.checks import Guard
from kgroups.protocol import apis
from kgroups.security.authorizer import Operation

GUARDS: dict[int, Guard] = {
    apis.DESCRIBE_USER_SCRAM_CREDENTIALS: cluster.describe_user_scram_credentials,
    apis.ALTER_USER_SCRAM_CREDENTIALS: cluster.alter_user_scram_credentials,
    apis.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
    apis.OFFSET_FETCH: groups.offset_fetch,
    apis.CREATE_TOPICS: topics.create_topics,
    apis.DELETE_TOPICS: topics.delete_topics,
    apis.CREATE_PARTITIONS: topics.create_partitions,
    apis.DELETE_RECORDS: topics.delete_records,
    apis.DESCRIBE_CONFIGS: cluster.describe_configs,
    apis.ALTER_CONFIGS: cluster.alter_configs,
    apis.INCREMENTAL_ALTER_CONFIGS: cluster.alter_configs,
    apis.DESCRIBE_CLIENT_QUOTAS: cluster.describe_client_quotas,
    apis.ALTER_CLIENT_QUOTAS: cluster.alter_client_quotas,
    apis.CONSUMER_GROUP_HEARTBEAT: groups.consumer_heartbeat,
    apis.CONSUMER_GROUP_DESCRIBE: groups.consumer_group_describe,
    apis.SHARE_GROUP_HEARTBEAT: share.share_heartbeat,
    apis.SHARE_GROUP_DESCRIBE: share.share_group_describe,
    apis.SHARE_FETCH: share.share_fetch,
    apis.SHARE_ACKNOWLEDGE: share.share_acknowledge,
    apis.DESCRIBE_SHARE_GROUP_OFFSETS: share.describe_share_group_offsets,
    apis.ALTER_SHARE_GROUP_OFFSETS: share.share_offsets_change_guard(Operation.READ),
    apis.DELETE_SHARE_GROUP_OFFSETS: share.share_offsets_change_guard(Operation.DELETE),
    apis.INITIALIZE_SHARE_GROUP_STATE: share_state.initialize,
    apis.READ_SHARE_GROUP_STATE: share_state.read,
    apis.WRITE_SHARE_GROUP_STATE: share_state.write,
    apis.DELETE_SHARE_GROUP_STATE: share_state.delete,
    apis.READ_SHARE_GROUP_STATE_SUMMARY: share_state.summary,
    apis.TXN_OFFSET_COMMIT: transactions.txn_offset_commit,
    apis.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
    apis.LIST_TRANSACTIONS: transactions.list_transactions,
    apis.FETCH: topics.fetch,
    apis.LIST_OFFSETS: topics.list_offsets,
    apis.OFFSET_FOR_LEADER_EPOCH: topics.offset_for_leader_epoch,
    apis.DELETE_GROUPS: groups.delete_groups,
    apis.OFFSET_DELETE: groups.offset_delete,
    apis.FIND_COORDINATOR: groups.find_coordinator,
    apis.WRITE_TXN_MARKERS: transactions.write_txn_markers,
    apis.JOIN_GROUP: groups.group_guard(Operation.READ),
    apis.SYNC_GROUP: groups.group_guard(Operation.READ),
    apis.HEARTBEAT: groups.group_guard(Operation.READ),
    apis.LEAVE_GROUP: groups.group_guard(Operation.READ),
    apis.OFFSET_COMMIT: groups.offset_commit,
    apis.DESCRIBE_GROUPS: groups.describe_groups,
    apis.LIST_GROUPS: groups.list_groups,
    apis.PRODUCE: topics.produce,
    apis.METADATA: topics.metadata,
    apis.INIT_PRODUCER_ID: transactions.init_producer_id,
    apis.END_TXN: transactions.end_txn,
    apis.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
    apis.DESCRIBE_CLUSTER: cluster.describe_cluster,
    apis.DESCRIBE_LOG_DIRS: cluster.describe_log_dirs,
    apis.DESCRIBE_PRODUCERS: topics.describe_producers,
    apis.DESCRIBE_TOPIC_PARTITIONS: topics.describe_topic_partitions,
    apis.CREATE_ACLS: cluster.create_acls,
    apis.DELETE_ACLS: cluster.delete_acls,
    apis.DESCRIBE_ACLS: cluster.describe_acls,
    apis.LIST_CONFIG_RESOURCES: cluster.list_config_resources,
}
