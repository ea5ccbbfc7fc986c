"""DescribeClientQuotas and AlterClientQuotas as a client sends them, one raw
request per call, for tests of what a broker alone or a cluster member answers."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from kgroups.errors import ErrorCode
from kgroups.protocol.types import i8

from raw_wire import call_once

Entity = Sequence[tuple[str, str | None]]
Op = tuple[str, float | None]  # (key, value; None removes it)


def alter_request(
    entries: Sequence[tuple[Entity, Sequence[Op]]], *, validate_only: bool = False, version: int = 1
) -> Any:
    schema = importlib.import_module(f"kio.schema.alter_client_quotas.v{version}.request")
    return schema.AlterClientQuotasRequest(
        entries=tuple(
            schema.EntryData(
                entity=tuple(schema.EntityData(entity_type=t, entity_name=n) for t, n in entity),
                ops=tuple(
                    schema.OpData(key=k, value=float(v or 0.0), remove=v is None) for k, v in ops
                ),
            )
            for entity, ops in entries
        ),
        validate_only=validate_only,
    )


def describe_request(
    components: Sequence[tuple[str, int, str | None]], *, strict: bool = False, version: int = 1
) -> Any:
    schema = importlib.import_module(f"kio.schema.describe_client_quotas.v{version}.request")
    return schema.DescribeClientQuotasRequest(
        components=tuple(
            schema.ComponentData(entity_type=t, match_type=i8(m), match=n) for t, m, n in components
        ),
        strict=strict,
    )


def alter(
    port: int,
    entries: Sequence[tuple[Entity, Sequence[Op]]],
    *,
    validate_only: bool = False,
    version: int = 1,
) -> list[tuple[ErrorCode, str | None]]:
    """AlterClientQuotas; (error, message) per entry, in order."""
    response = call_once(port, alter_request(entries, validate_only=validate_only, version=version))
    return [(e.error_code, e.error_message) for e in response.entries]


def describe(
    port: int,
    components: Sequence[tuple[str, int, str | None]] = (),
    *,
    strict: bool = False,
    version: int = 1,
) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]] | ErrorCode:
    """DescribeClientQuotas; the quotas by entity, or the error."""
    response = call_once(port, describe_request(components, strict=strict, version=version))
    if response.error_code != ErrorCode.none:
        return ErrorCode(response.error_code)
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: float(v.value) for v in entry.values
        }
        for entry in response.entries
    }
