"""`--command-config FILE`: the client properties a Kafka tool takes (the
security keys: security.protocol, ssl.*, sasl.*), read as Java reads a
.properties file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from kgroups.client.config_schema import ConfigError
from kgroups.client.security import PLAINTEXT, ClientSecurity

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_BLANK = " \t\f"  # Java's whitespace in a .properties line
_ENTRY = re.compile(r"((?:[^=:\s\\]|\\.)*)[ \t\f]*[=:]?[ \t\f]*(.*)", re.S)
_ESCAPE = re.compile(r"\\(u(?:[0-9a-fA-F]{4})?|.)", re.S)


def read_properties(path: Path) -> dict[str, str]:
    """``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments;
    ``\\uXXXX`` and the other escapes; a line ending in an odd number of
    backslashes continues on the next. A value keeps its trailing blanks."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        entry = _ENTRY.match(line)
        assert entry is not None  # every line matches: the key may be empty
        props[_unescape(entry.group(1))] = _unescape(entry.group(2))
    return props


def _logical_lines(text: str) -> Iterator[str]:
    logical: str | None = None
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(_BLANK)
        if logical is None and (not line or line[0] in "#!"):
            continue
        if (len(line) - len(line.rstrip("\\"))) % 2:
            logical = (logical or "") + line[:-1]
            continue
        yield (logical or "") + line
        logical = None
    if logical is not None:
        yield logical


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] == "u":
            if len(code) != 5:
                raise ConfigError("malformed \\uxxxx escape in a properties file")
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


def security_from(path: Path | None) -> ClientSecurity:
    if path is None:
        return PLAINTEXT
    return ClientSecurity.from_config(read_properties(path), kind="command")
