"""`kgroups acls add|list|remove`: kafka-acls.sh's everyday options over the wire."""

from __future__ import annotations

import argparse

from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.security.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)


def add_arguments(parser: argparse.ArgumentParser, action: str) -> None:
    parser.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--principal", help="list only this principal's ACLs")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST")
    parser.add_argument("--deny-host", action="append", default=[], metavar="HOST")
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        type=str.upper,
        choices=[o.name for o in Operation if o > Operation.ANY],
    )
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--transactional-id", action="append", default=[])
    parser.add_argument("--cluster", action="store_true")
    parser.add_argument(
        "--resource-pattern-type",
        type=str.upper,
        default="LITERAL" if action == "add" else "ANY",
        choices=["LITERAL", "PREFIXED"] + ([] if action == "add" else ["ANY", "MATCH"]),
    )


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str | None]]:
    out: list[tuple[ResourceType, str | None]] = []
    out += [(ResourceType.TOPIC, t) for t in args.topic]
    out += [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    resources = _resources(args)
    if not resources:
        raise SystemExit("name a resource: --topic, --group, --transactional-id or --cluster")
    if not args.operation:
        raise SystemExit("name an --operation")
    pattern = PatternType[args.resource_pattern_type]
    grants = [(p, Permission.ALLOW, args.allow_host or ["*"]) for p in args.allow_principal]
    grants += [(p, Permission.DENY, args.deny_host or ["*"]) for p in args.deny_principal]
    if not grants:
        raise SystemExit("name an --allow-principal or --deny-principal")
    return [
        AclBinding(rtype, name or "", pattern, principal, host, Operation[op], permission)
        for rtype, name in resources
        for principal, permission, hosts in grants
        for host in hosts
        for op in args.operation
    ]


def _filters(args: argparse.Namespace) -> list[AclFilter]:
    resources = _resources(args) or [(ResourceType.ANY, None)]
    principals = (
        args.allow_principal + args.deny_principal + ([args.principal] if args.principal else [])
    )
    permission = (
        Permission.ALLOW
        if args.allow_principal and not args.deny_principal
        else Permission.DENY
        if args.deny_principal and not args.allow_principal
        else Permission.ANY
    )
    return [
        AclFilter(
            rtype,
            name,
            PatternType[args.resource_pattern_type],
            principal,
            None,
            Operation[op] if op else Operation.ANY,
            permission,
        )
        for rtype, name in resources
        for principal in (principals or [None])
        for op in (args.operation or [None])
    ]


def describe(b: AclBinding) -> str:
    return (
        f"{b.resource_type.name} {b.pattern_type.name} {b.resource_name}: "
        f"{b.principal} from {b.host} {b.permission.name} {b.operation.name}"
    )


async def run(
    bootstrap: str, args: argparse.Namespace, security: ClientSecurity = PLAINTEXT
) -> str:
    # Imported when the command runs, not with the command line's parser.
    from kgroups.client import acls
    from kgroups.client.admin import Admin

    admin = Admin(bootstrap, security=security)
    try:
        if args.action == "add":
            bindings = _bindings(args)
            await acls.create_acls(admin, bindings)
            return "\n".join(f"added {describe(b)}" for b in bindings)
        if args.action == "list":
            found = [b for f in _filters(args) for b in await acls.describe_acls(admin, f)]
            return "\n".join(describe(b) for b in found)
        removed = [b for f in _filters(args) for b in await acls.delete_acls(admin, f)]
        return "\n".join(f"removed {describe(b)}" for b in removed)
    finally:
        await admin.close()
