"""DescribeClientQuotas and AlterClientQuotas (KIP-546): read and change the
quotas set on users, client ids and addresses.

Alter checks each entry as Kafka's controller does (a key named twice, an
entity named twice, an entity no quota is set on, a key or value the entity
does not take: INVALID_REQUEST for that entry alone), then writes the entity's
quotas where dynamic configs go: durable before the answer, and in a cluster
taken by every broker at its next read. ``validate_only`` checks only.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import TYPE_CHECKING

from kio.schema.alter_client_quotas.v1 import AlterClientQuotasRequest, AlterClientQuotasResponse
from kio.schema.alter_client_quotas.v1.response import EntityData as AlteredEntity
from kio.schema.alter_client_quotas.v1.response import EntryData as AlterResult
from kio.schema.describe_client_quotas.v1 import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kio.schema.describe_client_quotas.v1.response import EntityData, EntryData, ValueData
from kio.static.primitive import f64

from kgroups.errors import ErrorCode, KafkaError
from kgroups.handlers.common import NO_THROTTLE
from kgroups.handlers.dynamic_config_writes import write_dynamic_configs
from kgroups.quotas.entities import Entity, check_entity, check_value, encode_entity
from kgroups.quotas.filters import Component, matching
from kgroups.quotas.stored import CLIENT_QUOTAS, QuotaOp, apply_quota_ops

if TYPE_CHECKING:
    from kio.schema.alter_client_quotas.v1.request import EntryData as AlterEntry

    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.runtime.context import RequestContext

__all__ = ["alter", "describe"]


async def describe(
    broker: BrokerApi, ctx: RequestContext, request: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    quotas = broker.quotas.table.quotas
    components = [Component(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        found = matching(quotas, components, request.strict)
    except KafkaError as e:
        return DescribeClientQuotasResponse(
            throttle_time=NO_THROTTLE,
            error_code=e.error_code,
            error_message=e.message,
            entries=None,
        )
    entries = tuple(
        EntryData(
            entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
            values=tuple(ValueData(key=k, value=f64(v)) for k, v in sorted(quotas[entity].items())),
        )
        for entity in sorted(found, key=encode_entity)
    )
    return DescribeClientQuotasResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, entries=entries
    )


async def alter(
    broker: BrokerApi, ctx: RequestContext, request: AlterClientQuotasRequest
) -> AlterClientQuotasResponse:
    named = Counter(_raw(e) for e in request.entries)
    results = []
    for entry in request.entries:
        error, message = ErrorCode.none, None
        try:
            await _alter_one(broker, entry, named[_raw(entry)] > 1, request.validate_only)
        except KafkaError as e:
            error, message = e.error_code, e.message
        results.append(
            AlterResult(
                error_code=error,
                error_message=message,
                entity=tuple(
                    AlteredEntity(entity_type=p.entity_type, entity_name=p.entity_name)
                    for p in entry.entity
                ),
            )
        )
    return AlterClientQuotasResponse(throttle_time=NO_THROTTLE, entries=tuple(results))


def _raw(entry: AlterEntry) -> tuple[tuple[str, str | None], ...]:
    # A null name (the default) sorts before any name of its type.
    parts = ((p.entity_type, p.entity_name) for p in entry.entity)
    return tuple(sorted(parts, key=lambda part: (part[0], part[1] is not None, part[1] or "")))


async def _alter_one(
    broker: BrokerApi, entry: AlterEntry, duplicated: bool, validate_only: bool
) -> None:
    keys = Counter(op.key for op in entry.ops)
    twice = [k for k, n in keys.items() if n > 1]
    if twice:
        raise KafkaError(ErrorCode.invalid_request, f"Duplicate quota key {twice[0]}")
    if duplicated:
        raise KafkaError(ErrorCode.invalid_request, "Ignoring duplicate entity")
    entity: Entity = check_entity((p.entity_type, p.entity_name) for p in entry.entity)
    ops = [QuotaOp(op.key, float(op.value), op.remove) for op in entry.ops]
    for op in ops:
        if not op.remove:
            check_value(entity, op.key, op.value)
    if validate_only or not ops:
        return
    plan = functools.partial(apply_quota_ops, ops=ops)
    await write_dynamic_configs(broker, CLIENT_QUOTAS, encode_entity(entity), plan)
