"""DescribeClientQuotas and AlterClientQuotas from a client, as Kafka's Admin
sends them (to the controller: in kgroups, any broker)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kio.schema.alter_client_quotas.v1 import AlterClientQuotasRequest
from kio.schema.alter_client_quotas.v1.request import EntityData, EntryData, OpData
from kio.schema.describe_client_quotas.v1 import DescribeClientQuotasRequest
from kio.schema.describe_client_quotas.v1.request import ComponentData
from kio.static.primitive import f64

from kgroups.client.cluster import ClusterClient
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol import apis
from kgroups.protocol.types import i8

__all__ = [
    "MATCH_ANY",
    "MATCH_DEFAULT",
    "MATCH_EXACT",
    "Change",
    "Filter",
    "QuotaEntity",
    "QuotaEntry",
    "alter_client_quotas",
    "describe_client_quotas",
]

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

QuotaEntity = tuple[tuple[str, str | None], ...]
"""(entity type, name) parts; a None name is the type's default."""
Filter = tuple[str, int, str | None]  # (entity type, match type, name to match)
Change = tuple[str, float | None]  # (quota key, value; None removes it)


@dataclass(frozen=True, slots=True)
class QuotaEntry:
    entity: QuotaEntity
    values: dict[str, float]


async def describe_client_quotas(
    cluster: ClusterClient, components: Sequence[Filter] = (), *, strict: bool = False
) -> list[QuotaEntry]:
    """The quotas of the entities the filter matches, or a KafkaError."""
    conn = await cluster.controller()
    request = DescribeClientQuotasRequest(
        components=tuple(
            ComponentData(entity_type=t, match_type=i8(m), match=name) for t, m, name in components
        ),
        strict=strict,
    )
    version = conn.version_for(apis.DESCRIBE_CLIENT_QUOTAS, 0, 1)
    response = await conn.send(request, version=version)
    if response.error_code != ErrorCode.none:
        raise KafkaError(response.error_code, response.error_message)
    return [
        QuotaEntry(
            tuple((e.entity_type, e.entity_name) for e in entry.entity),
            {v.key: float(v.value) for v in entry.values},
        )
        for entry in response.entries or ()
    ]


async def alter_client_quotas(
    cluster: ClusterClient,
    changes: Mapping[QuotaEntity, Sequence[Change]],
    *,
    validate_only: bool = False,
) -> dict[QuotaEntity, KafkaError | None]:
    """Set or remove quota keys; per entity None (done) or the error."""
    conn = await cluster.controller()
    request = AlterClientQuotasRequest(
        entries=tuple(
            EntryData(
                entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
                ops=tuple(
                    OpData(key=key, value=f64(value or 0.0), remove=value is None)
                    for key, value in ops
                ),
            )
            for entity, ops in changes.items()
        ),
        validate_only=validate_only,
    )
    version = conn.version_for(apis.ALTER_CLIENT_QUOTAS, 0, 1)
    response = await conn.send(request, version=version)
    out: dict[QuotaEntity, KafkaError | None] = {}
    for entry in response.entries:
        entity = tuple((e.entity_type, e.entity_name) for e in entry.entity)
        ok = entry.error_code == ErrorCode.none
        out[entity] = None if ok else KafkaError(entry.error_code, entry.error_message)
    return out
