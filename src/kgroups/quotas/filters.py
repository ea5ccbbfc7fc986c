"""Which quota entities a DescribeClientQuotas filter matches, as Kafka's
ClientQuotasImage answers it.

Each component names an entity type and how its name must match: exactly
(MATCH_EXACT with a name), the default (MATCH_DEFAULT, no name), or any name
including the default (MATCH_ANY). An entity matches when it has every named
type, matched so; with ``strict`` it must have no other type. No components
and not strict: every entity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgroups.errors import ErrorCode, KafkaError
from kgroups.quotas.entities import CLIENT_ID, IP, USER, Entity

__all__ = ["MATCH_ANY", "MATCH_DEFAULT", "MATCH_EXACT", "Component", "matching"]

MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None


def matching(
    entities: Iterable[Entity], components: Iterable[Component], strict: bool
) -> list[Entity]:
    exact, any_name = _check(components)
    wanted = len(exact) + len(any_name)
    found = []
    for entity in entities:
        names = dict(entity)
        if any(t not in names or names[t] != name for t, name in exact.items()):
            continue
        if any(t not in names for t in any_name):
            continue
        if strict and len(names) != wanted:
            continue
        found.append(entity)
    return found


def _check(components: Iterable[Component]) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    any_name: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise KafkaError(ErrorCode.invalid_request, "Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in any_name:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Entity type {c.entity_type} cannot appear more than once in the filter.",
            )
        if c.entity_type not in (USER, CLIENT_ID, IP):
            # Kafka answers UNSUPPORTED_VERSION: a type a newer broker may know.
            raise KafkaError(
                ErrorCode.unsupported_version, f"Unsupported entity type {c.entity_type}"
            )
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                )
            exact[c.entity_type] = c.match
        elif c.match_type in (MATCH_DEFAULT, MATCH_ANY):
            if c.match is not None:
                name = (
                    "MATCH_TYPE_DEFAULT"
                    if c.match_type == MATCH_DEFAULT
                    else "MATCH_TYPE_SPECIFIED"
                )
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Request specified {name}, but also specified a match string.",
                )
            if c.match_type == MATCH_DEFAULT:
                exact[c.entity_type] = None
            else:
                any_name.add(c.entity_type)
        else:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown match type {c.match_type}")
    types = exact.keys() | any_name
    if IP in types and types & {USER, CLIENT_ID}:
        raise KafkaError(
            ErrorCode.invalid_request,
            "Invalid entity filter component combination. IP filter component should not"
            " be used with user or clientId filter component.",
        )
    return exact, any_name
