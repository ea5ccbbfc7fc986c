"""The values ``authorizer.class.name`` accepts: Kafka's authorizers by class
name, each served by kgroups' ACL authorizer (kgroups.security.authorizer)."""

from __future__ import annotations

__all__ = ["AUTHORIZER_CLASS_NAMES"]

AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
    }
)
