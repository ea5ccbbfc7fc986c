"""CreateAcls, DescribeAcls, DeleteAcls: the authorizer's bindings over the wire.

Who may call them is checked in handlers/access/cluster.py (Cluster ALTER to change,
Cluster DESCRIBE to read), as for every API; without an authorizer Kafka
answers SECURITY_DISABLED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from kio.schema.create_acls.v3 import CreateAclsRequest, CreateAclsResponse
from kio.schema.create_acls.v3.response import AclCreationResult
from kio.schema.delete_acls.v3 import DeleteAclsRequest, DeleteAclsResponse
from kio.schema.delete_acls.v3.request import DeleteAclsFilter
from kio.schema.delete_acls.v3.response import DeleteAclsFilterResult, DeleteAclsMatchingAcl
from kio.schema.describe_acls.v3 import DescribeAclsRequest, DescribeAclsResponse
from kio.schema.describe_acls.v3.request import DescribeAclsRequest as Filter
from kio.schema.describe_acls.v3.response import AclDescription, DescribeAclsResource

from kgroups.errors import ErrorCode
from kgroups.handlers.common import NO_THROTTLE
from kgroups.protocol.types import i8
from kgroups.security.authorizer import (
    AclBinding,
    AclFilter,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

E = TypeVar("E", ResourceType, PatternType, Operation, Permission)
_DISABLED = "No authorizer is configured (authorizer.class.name)."


def _enum(kind: type[E], value: int) -> E:
    try:
        return kind(value)
    except ValueError:
        return kind(0)  # UNKNOWN


async def create_acls(
    broker: BrokerApi, ctx: RequestContext, request: CreateAclsRequest
) -> CreateAclsResponse:
    results: list[AclCreationResult] = []
    valid: list[AclBinding] = []
    for c in request.creations:
        if broker.authorizer is None:
            results.append(
                AclCreationResult(error_code=ErrorCode.security_disabled, error_message=_DISABLED)
            )
            continue
        binding = AclBinding(
            _enum(ResourceType, c.resource_type),
            c.resource_name,
            _enum(PatternType, c.resource_pattern_type),
            c.principal,
            c.host,
            _enum(Operation, c.operation),
            _enum(Permission, c.permission_type),
        )
        try:
            binding.validate()
        except InvalidAcl as e:
            results.append(
                AclCreationResult(error_code=ErrorCode.invalid_request, error_message=str(e))
            )
            continue
        valid.append(binding)
        results.append(AclCreationResult(error_code=ErrorCode.none, error_message=None))
    if broker.authorizer is not None and valid:
        if broker.cluster is not None:
            await broker.cluster.create_acls(valid)  # every broker's, from the store
        else:
            broker.authorizer.create(valid)
    return CreateAclsResponse(throttle_time=NO_THROTTLE, results=tuple(results))


def _filter(f: Filter | DeleteAclsFilter) -> AclFilter:
    return AclFilter(
        _enum(ResourceType, f.resource_type_filter),
        f.resource_name_filter,
        _enum(PatternType, f.pattern_type_filter),
        f.principal_filter,
        f.host_filter,
        _enum(Operation, f.operation),
        _enum(Permission, f.permission_type),
    )


async def describe_acls(
    broker: BrokerApi, ctx: RequestContext, request: DescribeAclsRequest
) -> DescribeAclsResponse:
    if broker.authorizer is None:
        return DescribeAclsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.security_disabled,
            error_message=_DISABLED,
            resources=(),
        )
    acl_filter = _filter(request)
    by_resource: dict[tuple[int, str, int], list[AclDescription]] = {}
    for b in broker.authorizer.bindings():
        if acl_filter.matches(b):
            key = (b.resource_type.value, b.resource_name, b.pattern_type.value)
            by_resource.setdefault(key, []).append(
                AclDescription(
                    principal=b.principal,
                    host=b.host,
                    operation=i8(b.operation),
                    permission_type=i8(b.permission),
                )
            )
    return DescribeAclsResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        resources=tuple(
            DescribeAclsResource(
                resource_type=i8(rtype),
                resource_name=name,
                pattern_type=i8(ptype),
                acls=tuple(acls),
            )
            for (rtype, name, ptype), acls in by_resource.items()
        ),
    )


async def delete_acls(
    broker: BrokerApi, ctx: RequestContext, request: DeleteAclsRequest
) -> DeleteAclsResponse:
    results: list[DeleteAclsFilterResult] = []
    for f in request.filters:
        if broker.authorizer is None:
            results.append(
                DeleteAclsFilterResult(
                    error_code=ErrorCode.security_disabled,
                    error_message=_DISABLED,
                    matching_acls=(),
                )
            )
            continue
        if broker.cluster is not None:
            removed = await broker.cluster.delete_acls(_filter(f))
        else:
            removed = broker.authorizer.delete(_filter(f))
        results.append(
            DeleteAclsFilterResult(
                error_code=ErrorCode.none,
                error_message=None,
                matching_acls=tuple(
                    DeleteAclsMatchingAcl(
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=i8(b.resource_type),
                        resource_name=b.resource_name,
                        pattern_type=i8(b.pattern_type),
                        principal=b.principal,
                        host=b.host,
                        operation=i8(b.operation),
                        permission_type=i8(b.permission),
                    )
                    for b in removed
                ),
            )
        )
    return DeleteAclsResponse(throttle_time=NO_THROTTLE, filter_results=tuple(results))
