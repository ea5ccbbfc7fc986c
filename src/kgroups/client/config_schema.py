"""Typed client configuration under the Java client's property names.

A client takes a plain dict such as ``{"bootstrap.servers": "...", "group.id":
"billing"}``. Each key it knows is declared once here with its type and the Java
client's default; values may be given as Python values or as the strings a
``.properties`` file would hold. A misspelt key is an error that suggests the
closest known name, and a key the Java client has but kgroups does not honour is
an error that says so, rather than a setting silently ignored.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ConfigError", "Setting", "as_bool", "as_int", "as_list", "as_str", "resolve"]


class ConfigError(ValueError):
    """A client configuration that cannot work."""


def as_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("expected true or false")


def as_int(value: object) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ValueError("expected an integer")


def as_str(value: object) -> str:
    if isinstance(value, str):
        return value
    raise ValueError("expected a string")


def as_list(value: object) -> tuple[str, ...]:
    """A comma-separated string or a sequence of strings."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [as_str(v).strip() for v in value]
    else:
        raise ValueError("expected a list or a comma-separated string")
    return tuple(v for v in items if v)


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    parse: Callable[[object], Any]
    default: Any
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    secret: bool = False
    """A password-type key (as Java's Type.PASSWORD): its value is never shown."""

    def read(self, raw: object) -> Any:
        shown = self.name if self.secret else f"{self.name}={raw!r}"
        try:
            value = self.parse(raw)
        except ValueError as e:
            raise ConfigError(f"{shown}: {e}") from None
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.name}={value} is below its minimum {self.minimum}")
        if self.choices and value not in self.choices:
            raise ConfigError(f"{self.name}={value!r} is not one of {', '.join(self.choices)}")
        return value


def resolve(
    kind: str,
    settings: tuple[Setting, ...],
    raw: Mapping[str, object],
    unsupported: Mapping[str, str],
) -> tuple[dict[str, Any], set[str]]:
    """Every setting's value (given or default) and the names the user gave."""
    known = {s.name: s for s in settings}
    values = {s.name: s.default for s in settings}
    given: set[str] = set()
    for key, raw_value in raw.items():
        setting = known.get(key)
        if setting is None:
            if key in unsupported:
                raise ConfigError(f"{kind} config {key!r} is not supported: {unsupported[key]}")
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown {kind} config {key!r}{hint}")
        values[key] = setting.read(raw_value)
        given.add(key)
    return values, given
