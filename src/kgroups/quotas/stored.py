"""Quotas kept with the dynamic configs: one resource per entity, of a type
of kgroups' own (not one of Kafka's ConfigResource types, so no config API
reaches it), named by the encoded entity, its values the quota keys. They are
then durable and, in a cluster, shared through the store exactly as groups'
and brokers' configs are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgroups.quotas.entities import Entity, decode_entity

__all__ = ["CLIENT_QUOTAS", "QuotaOp", "apply_quota_ops", "stored_quotas"]

CLIENT_QUOTAS = 1001


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


def stored_quotas(resources: Mapping[str, Mapping[str, str]]) -> dict[Entity, dict[str, float]]:
    """The quotas by entity, from the resources of type CLIENT_QUOTAS."""
    return {
        decode_entity(name): {k: float(v) for k, v in values.items()}
        for name, values in resources.items()
        if values
    }


def apply_quota_ops(current: Mapping[str, str], ops: Iterable[QuotaOp]) -> dict[str, str]:
    changed = dict(current)
    for op in ops:
        if op.remove:
            changed.pop(op.key, None)
        else:
            changed[op.key] = repr(float(op.value))
    return changed
