"""The ACL file: what is acknowledged is on disk, and a crash mid-write keeps the old set."""

from __future__ import annotations

from pathlib import Path

from kgroups.security.acl_store import FILE_NAME, DurableAuthorizer
from kgroups.security.authorizer import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

READ = AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.LITERAL,
    "User:a",
    "*",
    Operation.READ,
    Permission.ALLOW,
)
DENY = AclBinding(
    ResourceType.GROUP,
    "g-",
    PatternType.PREFIXED,
    "User:*",
    "10.0.0.1",
    Operation.ALL,
    Permission.DENY,
)


def test_changes_are_read_back_by_a_new_authorizer(tmp_path: Path) -> None:
    az = DurableAuthorizer(tmp_path, frozenset(), False)
    az.create([READ, DENY])
    assert set(DurableAuthorizer(tmp_path, frozenset(), False).bindings()) == {READ, DENY}
    az.delete(
        AclFilter(
            ResourceType.GROUP, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY
        )
    )
    reopened = DurableAuthorizer(tmp_path, frozenset(), False)
    assert reopened.bindings() == [READ]
    assert reopened.authorize("User:a", "h", Operation.DESCRIBE, ResourceType.TOPIC, "orders")


def test_a_half_written_replacement_is_ignored(tmp_path: Path) -> None:
    DurableAuthorizer(tmp_path, frozenset(), False).create([READ])
    (tmp_path / (FILE_NAME + ".tmp")).write_text('{"version": 1, "acls": [{"resou')
    assert DurableAuthorizer(tmp_path, frozenset(), False).bindings() == [READ]
