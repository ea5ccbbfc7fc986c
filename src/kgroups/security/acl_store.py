"""The broker's ACL bindings on disk: one JSON file in the data directory,
replaced whole at each change (durable.py), so a crash keeps either
the old set or the new one."""

from __future__ import annotations

import json
from pathlib import Path

from kgroups.durable import replace_file
from kgroups.security.authorizer import (
    AclBinding,
    AclFilter,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

FILE_NAME = "acls.json"


def load_bindings(directory: Path) -> list[AclBinding]:
    path = directory / FILE_NAME
    if not path.exists():
        return []
    return [
        AclBinding(
            ResourceType[e["resource_type"]],
            e["resource_name"],
            PatternType[e["pattern_type"]],
            e["principal"],
            e["host"],
            Operation[e["operation"]],
            Permission[e["permission"]],
        )
        for e in json.loads(path.read_text())["acls"]
    ]


def save_bindings(directory: Path, bindings: list[AclBinding]) -> None:
    entries = [
        {
            "resource_type": b.resource_type.name,
            "resource_name": b.resource_name,
            "pattern_type": b.pattern_type.name,
            "principal": b.principal,
            "host": b.host,
            "operation": b.operation.name,
            "permission": b.permission.name,
        }
        for b in bindings
    ]
    directory.mkdir(parents=True, exist_ok=True)
    replace_file(directory / FILE_NAME, json.dumps({"version": 1, "acls": entries}).encode())


class DurableAuthorizer(Authorizer):
    """An Authorizer whose changes reach the disk before they are acknowledged."""

    def __init__(self, directory: Path, super_users: frozenset[str], allow_if_no_acl: bool) -> None:
        super().__init__(load_bindings(directory), super_users, allow_if_no_acl)
        self.directory = directory

    def create(self, bindings: list[AclBinding]) -> None:
        if any([self.add(b) for b in bindings]):
            save_bindings(self.directory, self.bindings())

    def delete(self, acl_filter: AclFilter) -> list[AclBinding]:
        removed = self.remove(acl_filter)
        if removed:
            save_bindings(self.directory, self.bindings())
        return removed
