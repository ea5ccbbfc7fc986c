"""Guards of the cluster APIs: DescribeCluster, DescribeConfigs, DescribeLogDirs,
ACLs, SCRAM credentials and client quotas."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kio.schema.alter_client_quotas.v1 import AlterClientQuotasResponse
from kio.schema.alter_client_quotas.v1.response import EntityData as AlteredQuotaEntity
from kio.schema.alter_client_quotas.v1.response import EntryData as AlterClientQuotasResult
from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsResponse
from kio.schema.alter_user_scram_credentials.v0.response import AlterUserScramCredentialsResult
from kio.schema.create_acls.v3 import CreateAclsResponse
from kio.schema.create_acls.v3.response import AclCreationResult
from kio.schema.delete_acls.v3 import DeleteAclsResponse
from kio.schema.delete_acls.v3.response import DeleteAclsFilterResult
from kio.schema.describe_acls.v3 import DescribeAclsResponse
from kio.schema.describe_client_quotas.v1 import DescribeClientQuotasResponse
from kio.schema.describe_configs.v4.response import DescribeConfigsResult
from kio.schema.describe_log_dirs.v4 import DescribeLogDirsResponse
from kio.schema.describe_user_scram_credentials.v0 import DescribeUserScramCredentialsResponse
from kio.schema.describe_user_scram_credentials.v0.response import (
    DescribeUserScramCredentialsResult,
)
from kio.schema.incremental_alter_configs.v1.response import (
    AlterConfigsResourceResponse as _AlterRefused,
)
from kio.schema.list_config_resources.v0 import ListConfigResourcesResponse

from kgroups.errors import ErrorCode
from kgroups.handlers.access.checks import (
    CLUSTER,
    CLUSTER_DENIED,
    GROUP,
    TOPIC,
    Handler,
    allowed,
    cluster_guard,
    serve_allowed,
)
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import i32
from kgroups.security.authorizer import CLUSTER_NAME, Authorizer, Operation

# Alike in every guard family yet nothing to share: names from checks.py, a guard's signature.
if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext


async def describe_cluster(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    # Kafka answers any client; Cluster DESCRIBE only decides whether the
    # authorized-operations bits are given (else 0).
    response: Any = await handler(broker, ctx, body)
    if body.include_cluster_authorized_operations:
        bits = 0
        if allowed(az, ctx, Operation.DESCRIBE, CLUSTER, CLUSTER_NAME):
            bits = az.authorized_operations(ctx.principal, ctx.client_host, CLUSTER, CLUSTER_NAME)
        response = dataclasses.replace(response, cluster_authorized_operations=i32(bits))
    return response


_CONFIG_RESOURCES = {
    2: (TOPIC, ErrorCode.topic_authorization_failed),
    4: (CLUSTER, CLUSTER_DENIED),
    16: (CLUSTER, CLUSTER_DENIED),  # client metrics subscriptions
    32: (GROUP, ErrorCode.group_authorization_failed),
}


async def describe_configs(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    def may(r: Any) -> bool:
        rtype, _ = _CONFIG_RESOURCES.get(r.resource_type, (None, None))
        if rtype is None:
            return True  # unknown resource types are the handler's to refuse
        name = CLUSTER_NAME if rtype == CLUSTER else r.resource_name
        return allowed(az, ctx, Operation.DESCRIBE_CONFIGS, rtype, name)

    denied = [r for r in body.resources if not may(r)]
    return await serve_allowed(
        broker, ctx, body, handler, "resources", denied, "results", _configs_refused
    )


async def alter_configs(
    az: Authorizer, broker: BrokerApi, ctx: RequestContext, body: Any, handler: Handler
) -> object:
    """AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS on the topic,
    the cluster (a broker's configs) or the group, as Kafka checks it."""

    def may(r: Any) -> bool:
        rtype, _ = _CONFIG_RESOURCES.get(r.resource_type, (None, None))
        if rtype is None:
            return True  # unknown resource types are the handler's to refuse
        name = CLUSTER_NAME if rtype == CLUSTER else r.resource_name
        return allowed(az, ctx, Operation.ALTER_CONFIGS, rtype, name)

    denied = [r for r in body.resources if not may(r)]
    return await serve_allowed(
        broker, ctx, body, handler, "resources", denied, "responses", _alter_refused
    )


def _alter_refused(denied: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        _AlterRefused(
            error_code=_CONFIG_RESOURCES[r.resource_type][1],
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
        )
        for r in denied
    )


def _configs_refused(denied: Sequence[Any]) -> tuple[DescribeConfigsResult, ...]:
    return tuple(
        DescribeConfigsResult(
            error_code=_CONFIG_RESOURCES[r.resource_type][1],
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
            configs=(),
        )
        for r in denied
    )


def _describe_scram_denied(body: Any) -> DescribeUserScramCredentialsResponse:
    # Kafka sets the error on the response and on a result per requested user;
    # librdkafka (2.16) crashes on a top-level error, so when users are named the
    # error is given per user only: every client still sees it for each. Asked
    # for every user, there is no other place for it than the response.
    users = body.users or ()
    return DescribeUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none if users else CLUSTER_DENIED,
        error_message=None if users else "Cluster DESCRIBE is needed to describe credentials",
        results=tuple(
            DescribeUserScramCredentialsResult(
                user=u.name, error_code=CLUSTER_DENIED, error_message=None, credential_infos=()
            )
            for u in users
        ),
    )


def _alter_scram_denied(body: Any) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys(c.name for c in body.deletions + body.upsertions)
    return AlterUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            AlterUserScramCredentialsResult(user=u, error_code=CLUSTER_DENIED, error_message=None)
            for u in users
        ),
    )


describe_user_scram_credentials = cluster_guard(Operation.DESCRIBE, _describe_scram_denied)
alter_user_scram_credentials = cluster_guard(Operation.ALTER, _alter_scram_denied)
create_acls = cluster_guard(
    Operation.ALTER,
    lambda body: CreateAclsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            AclCreationResult(error_code=CLUSTER_DENIED, error_message=None) for _ in body.creations
        ),
    ),
)
delete_acls = cluster_guard(
    Operation.ALTER,
    lambda body: DeleteAclsResponse(
        throttle_time=NO_THROTTLE,
        filter_results=tuple(
            DeleteAclsFilterResult(error_code=CLUSTER_DENIED, error_message=None, matching_acls=())
            for _ in body.filters
        ),
    ),
)
describe_acls = cluster_guard(
    Operation.DESCRIBE,
    lambda body: DescribeAclsResponse(
        throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, error_message=None, resources=()
    ),
)
# The error is top-level from v3; v1 and v2 can only answer no log directories.
describe_log_dirs = cluster_guard(
    Operation.DESCRIBE,
    lambda body: DescribeLogDirsResponse(
        throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, results=()
    ),
)
describe_client_quotas = cluster_guard(
    Operation.DESCRIBE_CONFIGS,
    lambda body: DescribeClientQuotasResponse(
        throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, error_message=None, entries=None
    ),
)
alter_client_quotas = cluster_guard(
    Operation.ALTER_CONFIGS,
    lambda body: AlterClientQuotasResponse(
        throttle_time=NO_THROTTLE,
        entries=tuple(
            AlterClientQuotasResult(
                error_code=CLUSTER_DENIED,
                error_message=None,
                entity=tuple(
                    AlteredQuotaEntity(entity_type=p.entity_type, entity_name=p.entity_name)
                    for p in e.entity
                ),
            )
            for e in body.entries
        ),
    ),
)
# Listing the client metrics subscriptions is describing the cluster's configs.
list_config_resources = cluster_guard(
    Operation.DESCRIBE_CONFIGS,
    lambda body: ListConfigResourcesResponse(
        throttle_time=NO_THROTTLE, error_code=CLUSTER_DENIED, config_resources=()
    ),
)
