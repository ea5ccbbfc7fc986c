"""The ACL rules alone: StandardAuthorizer's answers for chosen bindings."""

from __future__ import annotations

import pytest

from kgroups.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Authorizer,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

ALICE, BOB = "User:alice", "User:bob"
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
O = Operation  # noqa: E741


def acl(
    name: str,
    op: Operation,
    perm: Permission = ALLOW,
    principal: str = ALICE,
    pattern: PatternType = LIT,
    host: str = "*",
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def may(az: Authorizer, op: Operation, name: str, who: str = ALICE, host: str = "10.0.0.1") -> bool:
    return az.authorize(who, host, op, TOPIC, name)


def test_literal_allow_is_for_that_principal_and_name_only() -> None:
    az = Authorizer([acl("orders", O.READ)])
    assert may(az, O.READ, "orders")
    assert not may(az, O.READ, "orders", who=BOB)
    assert not may(az, O.READ, "orders2")
    assert not may(az, O.WRITE, "orders")


def test_deny_wins_over_allow() -> None:
    az = Authorizer([acl("orders", O.ALL), acl("orders", O.WRITE, DENY)])
    assert may(az, O.READ, "orders")
    assert not may(az, O.WRITE, "orders")
    az = Authorizer(
        [acl("orders", O.READ), acl("ord", O.ALL, DENY, principal="User:*", pattern=PRE)]
    )
    assert not may(az, O.READ, "orders")


def test_prefixed_and_wildcard_patterns() -> None:
    az = Authorizer([acl("pay-", O.READ, pattern=PRE), acl("*", O.DESCRIBE, principal="User:*")])
    assert may(az, O.READ, "pay-eu")
    assert not may(az, O.READ, "payroll")
    assert may(az, O.DESCRIBE, "anything", who=BOB)


def test_implied_operations() -> None:
    az = Authorizer([acl("a", O.READ), acl("b", O.ALTER_CONFIGS), acl("c", O.DESCRIBE)])
    assert may(az, O.DESCRIBE, "a")
    assert may(az, O.DESCRIBE_CONFIGS, "b")
    assert not may(az, O.READ, "c")


def test_host_acl() -> None:
    az = Authorizer([acl("orders", O.READ, host="10.0.0.1")])
    assert may(az, O.READ, "orders", host="10.0.0.1")
    assert not may(az, O.READ, "orders", host="10.0.0.2")


def test_super_users_and_no_acl_found() -> None:
    az = Authorizer([acl("orders", O.READ)], super_users=frozenset({BOB}))
    assert may(az, O.WRITE, "orders", who=BOB)
    assert not may(az, O.READ, "free")
    open_az = Authorizer([acl("orders", O.READ)], allow_if_no_acl=True)
    assert may(open_az, O.READ, "free", who=BOB)
    assert not may(open_az, O.READ, "orders", who=BOB)  # orders has ACLs: only alice


def test_authorize_any_topic_for_idempotent_producers() -> None:
    az = Authorizer([acl("t-", O.WRITE, pattern=PRE)])
    assert az.authorize_any(ALICE, "h", O.WRITE, TOPIC)
    assert not az.authorize_any(BOB, "h", O.WRITE, TOPIC)
    denied = Authorizer([acl("t-", O.WRITE, pattern=PRE), acl("t", O.WRITE, DENY, pattern=PRE)])
    assert not denied.authorize_any(ALICE, "h", O.WRITE, TOPIC)


def test_authorized_operations_bits() -> None:
    az = Authorizer([acl("g", O.READ, rtype=GROUP)])
    bits = az.authorized_operations(ALICE, "h", GROUP, "g")
    assert bits == (1 << O.READ) | (1 << O.DESCRIBE)


def test_filters_select_and_remove() -> None:
    az = Authorizer([acl("a", O.READ), acl("a", O.WRITE), acl("pay-", O.READ, pattern=PRE)])
    match = AclFilter(TOPIC, "pay-eu", PatternType.MATCH, None, None, O.ANY, Permission.ANY)
    assert [b.resource_name for b in az.bindings() if match.matches(b)] == ["pay-"]
    removed = az.remove(
        AclFilter(ResourceType.ANY, "a", PatternType.ANY, ALICE, None, O.ANY, Permission.ANY)
    )
    assert len(removed) == 2 and len(az.bindings()) == 1
    assert not may(az, O.READ, "a")
    assert may(az, O.READ, "pay-eu")


@pytest.mark.parametrize(
    "binding",
    [
        acl("", O.READ, rtype=GROUP),
        acl("c", O.READ, rtype=ResourceType.CLUSTER),
        acl("a", O.ANY),
        AclBinding(TOPIC, "a", PatternType.MATCH, ALICE, "*", O.READ, ALLOW),
        acl("a", O.READ, principal="alice"),
    ],
)
def test_invalid_bindings_are_refused(binding: AclBinding) -> None:
    with pytest.raises(InvalidAcl):
        binding.validate()
    acl(CLUSTER_NAME, O.ALTER, rtype=ResourceType.CLUSTER).validate()
