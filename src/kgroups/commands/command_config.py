"""`--command-config FILE`: the client properties a Kafka tool takes (the
security keys: security.protocol, ssl.*, sasl.*), read as Java reads a
.properties file."""

from __future__ import annotations

import re
from pathlib import Path

from kgroups.client.security import PLAINTEXT, ClientSecurity

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: Path) -> dict[str, str]:
    """``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments; a
    line ending in an odd number of backslashes continues on the next."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    props: dict[str, str] = {}
    logical = ""
    for raw in lines:
        line = raw.lstrip() if logical else raw.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line.rstrip() if not logical else line
        key, value = _split(logical.strip())
        props[key] = value
        logical = ""
    if logical:
        key, value = _split(logical.strip())
        props[key] = value
    return props


def _split(line: str) -> tuple[str, str]:
    m = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]?\s*(.*)", line, re.S)
    if m is None:
        raise ValueError(f"cannot read the property line {line!r}")
    return _unescape(m.group(1)), _unescape(m.group(2))


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def security_from(path: Path | None) -> ClientSecurity:
    if path is None:
        return PLAINTEXT
    return ClientSecurity.from_config(read_properties(path), kind="command")
