"""ACL rules with the semantics of Kafka's StandardAuthorizer (sans IO).

An ACL binding says: principal P from host H may (ALLOW) or may not (DENY)
do operation O on the resources a pattern names (one name, LITERAL; every
name starting with a prefix, PREFIXED; every name, the LITERAL ``*``). A
request is allowed when no DENY matches and some ALLOW does; a super user is
always allowed, and a resource no ACL names at all is allowed only with
``allow.everyone.if.no.acl.found``. Holding READ, WRITE, DELETE or ALTER
implies DESCRIBE, and ALTER_CONFIGS implies DESCRIBE_CONFIGS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Holding the value allows the key too (only for ALLOW bindings, as Kafka).
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}

# The operations each resource type knows (what include_authorized_operations lists).
OPERATIONS: dict[ResourceType, tuple[Operation, ...]] = {
    ResourceType.TOPIC: (
        Operation.READ,
        Operation.WRITE,
        Operation.CREATE,
        Operation.DELETE,
        Operation.ALTER,
        Operation.DESCRIBE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    # Group configs (KIP-848) made DESCRIBE_CONFIGS and ALTER_CONFIGS group operations.
    ResourceType.GROUP: (
        Operation.READ,
        Operation.DELETE,
        Operation.DESCRIBE,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        Operation.CREATE,
        Operation.ALTER,
        Operation.DESCRIBE,
        Operation.CLUSTER_ACTION,
        Operation.DESCRIBE_CONFIGS,
        Operation.ALTER_CONFIGS,
        Operation.IDEMPOTENT_WRITE,
    ),
    ResourceType.TRANSACTIONAL_ID: (Operation.WRITE, Operation.DESCRIBE),
    ResourceType.DELEGATION_TOKEN: (Operation.DESCRIBE,),
    ResourceType.USER: (Operation.CREATE_TOKENS, Operation.DESCRIBE_TOKENS),
}


class InvalidAcl(ValueError):
    """A binding that cannot be stored (Kafka answers INVALID_REQUEST)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def validate(self) -> None:
        if self.resource_type not in OPERATIONS:
            raise InvalidAcl(f"resource type {self.resource_type} cannot carry an ACL")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl("pattern type must be LITERAL or PREFIXED")
        if self.operation in (Operation.ANY, Operation.UNKNOWN):
            raise InvalidAcl("operation must be concrete")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl("permission must be ALLOW or DENY")
        if not self.resource_name:
            raise InvalidAcl("resource name must not be empty")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"the cluster resource is named {CLUSTER_NAME}")
        if ":" not in self.principal:
            raise InvalidAcl(f"principal {self.principal!r} is not TYPE:NAME")

    def matches_resource(self, name: str) -> bool:
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select; None and ANY match everything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != Operation.ANY and self.operation != b.operation:
            return False
        if self.permission != Permission.ANY and self.permission != b.permission:
            return False
        return self._matches_pattern(b)

    def _matches_pattern(self, b: AclBinding) -> bool:
        p, name = self.pattern_type, self.resource_name
        if p == PatternType.MATCH:
            # Every binding that would apply to the resource ``name``.
            return name is None or b.matches_resource(name)
        if p != PatternType.ANY and p != b.pattern_type:
            return False
        return name is None or name == b.resource_name


def parse_super_users(value: str) -> frozenset[str]:
    return frozenset(p.strip() for p in value.split(";") if p.strip())


class Authorizer:
    """Answers "may this principal from this host do this?" from a set of bindings."""

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._bindings: dict[ResourceType, list[AclBinding]] = {}
        # Found per check without scanning every binding: literal ones (and the
        # ``*`` wildcard) by name, prefixed ones by type.
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        for b in bindings:
            self.add(b)

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Hold exactly ``bindings`` (the cluster store's set, read again)."""
        self._bindings, self._literal, self._prefixed = {}, {}, {}
        for b in bindings:
            self.add(b)

    def bindings(self) -> list[AclBinding]:
        return [b for bs in self._bindings.values() for b in bs]

    def add(self, binding: AclBinding) -> bool:
        """Add ``binding``; False when it was there already."""
        bs = self._bindings.setdefault(binding.resource_type, [])
        if binding in bs:
            return False
        bs.append(binding)
        self._index(binding).append(binding)
        return True

    def _index(self, b: AclBinding) -> list[AclBinding]:
        if b.pattern_type == PatternType.PREFIXED:
            return self._prefixed.setdefault(b.resource_type, [])
        return self._literal.setdefault((b.resource_type, b.resource_name), [])

    def remove(self, acl_filter: AclFilter) -> list[AclBinding]:
        """Remove and return the bindings ``acl_filter`` selects."""
        removed = [b for b in self.bindings() if acl_filter.matches(b)]
        for b in removed:
            self._bindings[b.resource_type].remove(b)
            self._index(b).remove(b)
        return removed

    def authorize(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        literal = self._literal
        acls = [
            *literal.get((rtype, name), ()),
            *(literal.get((rtype, WILDCARD), ()) if name != WILDCARD else ()),
            *(b for b in self._prefixed.get(rtype, ()) if name.startswith(b.resource_name)),
        ]
        if not acls:
            return self.allow_if_no_acl
        implied = _IMPLIED_BY.get(operation, frozenset())
        allowed = False
        for b in acls:
            if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
                continue
            if b.host != host and b.host != WILDCARD:
                continue
            if b.permission == Permission.DENY:
                if b.operation in (operation, Operation.ALL):
                    return False  # a DENY wins over every ALLOW
            elif b.operation in (operation, Operation.ALL) or b.operation in implied:
                allowed = True
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: Operation, rtype: ResourceType
    ) -> bool:
        """Whether some resource of ``rtype`` may be operated on (Kafka's
        authorizeByResourceType): a super user, or an ALLOW that no DENY on a
        wider pattern cancels."""
        if principal in self.super_users:
            return True
        implied = _IMPLIED_BY.get(operation, frozenset())

        def applies(b: AclBinding) -> bool:
            return (
                b.principal in (principal, WILDCARD_PRINCIPAL)
                and b.host in (host, WILDCARD)
                and (b.operation in (operation, Operation.ALL) or b.operation in implied)
            )

        acls = [b for b in self._bindings.get(rtype, ()) if applies(b)]
        denied = [b for b in acls if b.permission == Permission.DENY]
        if any(
            b.resource_name == WILDCARD and b.pattern_type == PatternType.LITERAL for b in denied
        ):
            return False
        for b in acls:
            if b.permission != Permission.ALLOW:
                continue
            if not any(d.matches_resource(b.resource_name) for d in denied):
                return True
        return self.allow_if_no_acl and not self._bindings.get(rtype)

    def authorized_operations(
        self, principal: str, host: str, rtype: ResourceType, name: str
    ) -> int:
        """The bit field include_authorized_operations answers."""
        bits = 0
        for op in OPERATIONS[rtype]:
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << op
        return bits
