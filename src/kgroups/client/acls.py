"""ACL administration over the wire (CreateAcls, DescribeAcls, DeleteAcls):
the calls behind `kgroups acls ...`; works against any Kafka cluster."""

from __future__ import annotations

from typing import Any

from kio.schema.create_acls.v3 import CreateAclsRequest
from kio.schema.create_acls.v3.request import AclCreation
from kio.schema.delete_acls.v3 import DeleteAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter
from kio.schema.describe_acls.v3 import DescribeAclsRequest

from kgroups.client.admin import Admin
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import i8
from kgroups.security.authorizer import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)


def _check(error: int, message: str | None) -> None:
    if error != ErrorCode.none:
        raise KafkaError(ErrorCode(error), message)


def _filter_fields(f: AclFilter) -> dict[str, Any]:
    """An ACL filter as DescribeAcls and DeleteAcls spell it (the same fields)."""
    return {
        "resource_type_filter": i8(f.resource_type),
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": i8(f.pattern_type),
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": i8(f.operation),
        "permission_type": i8(f.permission),
    }


def _binding(resource: Any, acl: Any) -> AclBinding:
    """An ACL as DescribeAcls and DeleteAcls answer it: the resource's fields
    from ``resource``, the rest from ``acl`` (one object in a DeleteAcls match)."""
    return AclBinding(
        ResourceType(resource.resource_type),
        resource.resource_name,
        PatternType(resource.pattern_type),
        acl.principal,
        acl.host,
        Operation(acl.operation),
        Permission(acl.permission_type),
    )


async def create_acls(admin: Admin, bindings: list[AclBinding]) -> None:
    conn = await admin.cluster.any_connection()
    response = await conn.send(
        CreateAclsRequest(
            creations=tuple(
                AclCreation(
                    resource_type=i8(b.resource_type),
                    resource_name=b.resource_name,
                    resource_pattern_type=i8(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=i8(b.operation),
                    permission_type=i8(b.permission),
                )
                for b in bindings
            )
        ),
        version=conn.version_for(apis.CREATE_ACLS, 1, 3),
    )
    for r in response.results:
        _check(r.error_code, r.error_message)


async def describe_acls(admin: Admin, f: AclFilter) -> list[AclBinding]:
    conn = await admin.cluster.any_connection()
    response = await conn.send(
        DescribeAclsRequest(**_filter_fields(f)),
        version=conn.version_for(apis.DESCRIBE_ACLS, 1, 3),
    )
    _check(response.error_code, response.error_message)
    return [_binding(r, a) for r in response.resources for a in r.acls]


async def delete_acls(admin: Admin, f: AclFilter) -> list[AclBinding]:
    conn = await admin.cluster.any_connection()
    response = await conn.send(
        DeleteAclsRequest(filters=(DeleteAclsFilter(**_filter_fields(f)),)),
        version=conn.version_for(apis.DELETE_ACLS, 1, 3),
    )
    (result,) = response.filter_results
    _check(result.error_code, result.error_message)
    return [_binding(m, m) for m in result.matching_acls]
