"""Request handlers, one file per API; ROUTES maps an API key to its handler.

A handler gets the request in the newest schema version we serve (see
protocol/versions.py) unless its route says otherwise, and returns the
response in that same newest version, or None when no response is due
(Produce with acks=0).

A route names its handler ("module.function" in this package), imported at
the first request of its API: a test broker starts without importing the
handlers (and the protocol schemas they use) of APIs its test never calls.
``kgroups serve`` imports them all before it listens (``load_all``), so a
production broker never imports on its event loop.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, cast

from kgroups.protocol import apis

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

Handler = Callable[["BrokerApi", "RequestContext", Any], Awaitable[object | None]]


@dataclass(frozen=True, slots=True)
class Route:
    where: str | Handler
    """The handler, or where it is: "module.function", the module in this package."""
    upgrade: bool = True

    @property
    def handler(self) -> Handler:
        return _handler(self.where) if isinstance(self.where, str) else self.where


@functools.cache
def _handler(where: str) -> Handler:
    module, _, name = where.partition(".")
    return cast(Handler, getattr(import_module(f"kgroups.handlers.{module}"), name))


def load_all() -> None:
    """Import every route's handler now."""
    for route in ROUTES.values():
        route.handler  # noqa: B018 - imported for its effect


ROUTES: dict[int, Route] = {
    apis.API_VERSIONS: Route("api_versions.handle"),
    # v8-v10 ask for cluster operations, a field the newest lacks: the handler upgrades.
    apis.METADATA: Route("metadata.handle", upgrade=False),
    apis.CREATE_TOPICS: Route("create_topics.handle"),
    # v1-v5 list names, v6 names or ids: the handler reads both shapes.
    apis.DELETE_TOPICS: Route("delete_topics.handle", upgrade=False),
    apis.DESCRIBE_CONFIGS: Route("describe_configs.handle"),
    apis.ALTER_CONFIGS: Route("alter_configs.alter"),
    apis.INCREMENTAL_ALTER_CONFIGS: Route("alter_configs.incremental_alter"),
    apis.DESCRIBE_CLIENT_QUOTAS: Route("client_quotas.describe"),
    apis.ALTER_CLIENT_QUOTAS: Route("client_quotas.alter"),
    apis.CREATE_PARTITIONS: Route("create_partitions.handle"),
    apis.DELETE_RECORDS: Route("delete_records.handle"),
    apis.CREATE_ACLS: Route("acls.create_acls"),
    apis.DESCRIBE_ACLS: Route("acls.describe_acls"),
    apis.DELETE_ACLS: Route("acls.delete_acls"),
    apis.DESCRIBE_CLUSTER: Route("describe_cluster.handle"),
    apis.DESCRIBE_LOG_DIRS: Route("describe_log_dirs.handle"),
    apis.DESCRIBE_PRODUCERS: Route("describe_producers.handle"),
    apis.DESCRIBE_TOPIC_PARTITIONS: Route("describe_topic_partitions.handle"),
    apis.PRODUCE: Route("produce.handle"),
    apis.FETCH: Route("fetch.handle"),
    apis.LIST_OFFSETS: Route("list_offsets.handle"),
    apis.OFFSET_FOR_LEADER_EPOCH: Route("offset_for_leader_epoch.handle"),
    apis.INIT_PRODUCER_ID: Route("init_producer_id.handle"),
    apis.WRITE_TXN_MARKERS: Route("write_txn_markers.handle"),
    # v0-v3 carry one transaction, v4 several: the handler reads both shapes.
    apis.ADD_PARTITIONS_TO_TXN: Route("transactions.add_partitions_to_txn", upgrade=False),
    apis.ADD_OFFSETS_TO_TXN: Route("transactions.add_offsets_to_txn"),
    apis.END_TXN: Route("transactions.end_txn"),
    apis.DESCRIBE_TRANSACTIONS: Route("transactions.describe_transactions"),
    apis.LIST_TRANSACTIONS: Route("transactions.list_transactions"),
    # v0-v3 name one key, v4 a list: the handler reads both shapes.
    apis.FIND_COORDINATOR: Route("find_coordinator.handle", upgrade=False),
}

ROUTES.update(
    {
        apis.SASL_HANDSHAKE: Route("sasl.handshake"),
        apis.SASL_AUTHENTICATE: Route("sasl.authenticate"),
        apis.DESCRIBE_USER_SCRAM_CREDENTIALS: Route("scram_credentials.describe"),
        apis.ALTER_USER_SCRAM_CREDENTIALS: Route("scram_credentials.alter"),
        apis.JOIN_GROUP: Route("groups.join_group"),
        apis.SYNC_GROUP: Route("groups.sync_group"),
        apis.HEARTBEAT: Route("groups.heartbeat"),
        # Shapes changed across versions: the handlers convert themselves.
        apis.LEAVE_GROUP: Route("groups.leave_group", upgrade=False),
        apis.OFFSET_COMMIT: Route("groups.offset_commit", upgrade=False),
        apis.OFFSET_FETCH: Route("groups.offset_fetch", upgrade=False),
        apis.OFFSET_DELETE: Route("groups.offset_delete"),
        apis.TXN_OFFSET_COMMIT: Route("groups.txn_offset_commit"),
        apis.DESCRIBE_GROUPS: Route("groups.describe_groups"),
        apis.LIST_GROUPS: Route("groups.list_groups"),
        apis.DELETE_GROUPS: Route("groups.delete_groups"),
        apis.CONSUMER_GROUP_HEARTBEAT: Route("consumer_groups.heartbeat"),
        apis.CONSUMER_GROUP_DESCRIBE: Route("consumer_groups.describe"),
        apis.GET_TELEMETRY_SUBSCRIPTIONS: Route("telemetry.get_subscriptions"),
        apis.PUSH_TELEMETRY: Route("telemetry.push"),
        apis.LIST_CONFIG_RESOURCES: Route("list_config_resources.handle"),
        apis.SHARE_GROUP_HEARTBEAT: Route("share_groups.heartbeat"),
        apis.SHARE_GROUP_DESCRIBE: Route("share_groups.describe"),
        apis.SHARE_FETCH: Route("share_fetch.handle"),
        apis.SHARE_ACKNOWLEDGE: Route("share_acknowledge.handle"),
        apis.DESCRIBE_SHARE_GROUP_OFFSETS: Route("share_group_offsets.describe"),
        apis.ALTER_SHARE_GROUP_OFFSETS: Route("share_group_offsets.alter"),
        apis.DELETE_SHARE_GROUP_OFFSETS: Route("share_group_offsets.delete"),
        apis.INITIALIZE_SHARE_GROUP_STATE: Route("share_state_apis.initialize"),
        apis.READ_SHARE_GROUP_STATE: Route("share_state_apis.read"),
        apis.WRITE_SHARE_GROUP_STATE: Route("share_state_apis.write"),
        apis.DELETE_SHARE_GROUP_STATE: Route("share_state_apis.delete"),
        apis.READ_SHARE_GROUP_STATE_SUMMARY: Route("share_state_apis.summary"),
    }
)

assert set(ROUTES) == set(apis.SUPPORTED), set(apis.SUPPORTED) ^ set(ROUTES)
