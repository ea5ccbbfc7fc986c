"""The operations of IncrementalAlterConfigs (KIP-339) on a resource's configs.

SET and DELETE change one key's override; APPEND and SUBTRACT add items to,
or take them from, a list-valued key (``cleanup.policy``), starting from its
effective value when it has no override, as Kafka's controller does. What the
result means is checked afterwards by the resource's own validation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgroups.errors import ErrorCode, KafkaError

__all__ = ["APPEND", "DELETE", "SET", "SUBTRACT", "ConfigOp", "apply_ops", "check_ops"]

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


@dataclass(frozen=True, slots=True)
class ConfigOp:
    name: str
    op: int
    value: str | None


def check_ops(ops: Iterable[ConfigOp]) -> None:
    """Refuse what no resource accepts, as Kafka's preprocessing does: a key
    named twice, an unknown operation, a null value for anything but DELETE."""
    ops = list(ops)
    names = [o.name for o in ops]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    nulls = [o.name for o in ops if o.op != DELETE and o.value is None]
    if nulls:
        raise KafkaError(
            ErrorCode.invalid_request, "Null value not supported for : " + ", ".join(nulls)
        )
    for o in ops:
        if o.op not in _NAMES:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown operation type {o.op}")


def apply_ops(
    overrides: Mapping[str, str],
    effective: Mapping[str, str],
    ops: Iterable[ConfigOp],
    list_keys: frozenset[str],
) -> dict[str, str]:
    """The overrides after ``ops`` (checked with ``check_ops``)."""
    changed = dict(overrides)
    for o in ops:
        if o.op == DELETE:
            changed.pop(o.name, None)
            continue
        assert o.value is not None
        if o.op == SET:
            changed[o.name] = o.value
            continue
        if o.name not in list_keys:
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Can't {_NAMES[o.op]} to key {o.name} because its type is not LIST.",
            )
        items = _items(changed.get(o.name, effective.get(o.name, "")))
        values = _items(o.value)
        if o.op == APPEND:
            items += [v for v in values if v not in items]
        else:
            items = [i for i in items if i not in values]
        changed[o.name] = ",".join(items)
    return changed


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
