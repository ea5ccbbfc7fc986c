"""``ssl.principal.mapping.rules`` (KIP-371): from a client certificate's
distinguished name (RFC 2253 form) to the name of its principal.

The value is a comma-separated list of rules, tried in order; the first that
applies names the principal, and a name no rule applies to is refused:

- ``DEFAULT``: the distinguished name itself.
- ``RULE:pattern/replacement/``, optionally followed by ``L`` or ``U``: when the
  Java regular expression ``pattern`` matches the whole name, every match of it
  is replaced by ``replacement`` (``$1``.. name groups, ``\\`` escapes the next
  character; a group number the pattern lacks is kept as text), then the result
  is lower-cased (``L``) or upper-cased (``U``). ``/`` inside the pattern or the
  replacement is written ``\\/``.

Splitting, parsing and the odd corners (empty rules skipped, blanks around
commas dropped, trailing text after the rule refused) follow Kafka's
SslPrincipalMapper; the patterns run on Python's ``re``, which reads the usual
Java expressions alike (not possessive quantifiers or ``\\p{..}`` classes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One rule, as Kafka's grammar reads it. The last alternative swallows nothing
# (lazily), so that any rule that is not DEFAULT or RULE:x/y/ fails to parse.
_RULE = (
    r"(?P<default>DEFAULT)"
    r"|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?).*?"
    r"|.*?"
)
# Rules in a list: each with the blanks around it and the comma after it.
_NEXT_RULE = r"\s*(" + _RULE + r")\s*(?:,\s*|$)"
# Java names a group (?<name>...), Python (?P<name>...).
_JAVA_NAMED_GROUP = r"(?<!\\)\(\?<(?=[A-Za-z])"
# Compiled at their first use (by re, which keeps them), not with the broker:
# only an SSL listener with mapping rules reads any.


class InvalidRules(ValueError):
    """The rules do not parse; the message names the rule."""


class NoMatchingRule(Exception):
    """No rule applies to a distinguished name: the connection is refused."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None
    """None: DEFAULT."""
    replacement: str = ""
    case: str = ""
    """"L", "U" or ""."""
    written: str = ""
    """The pattern as the rule gives it."""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        groups = self.pattern.groups
        out = self.pattern.sub(lambda m: _expand(self.replacement, m, groups), name)
        if self.case == "L":
            return out.lower()
        return out.upper() if self.case == "U" else out

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        suffix = f"/{self.case}" if self.case else ""
        return f"RULE:{self.written}/{self.replacement}{suffix}"


def _expand(template: str, match: re.Match[str], groups: int) -> str:
    """A Java replacement string for one match: ``\\x`` is x, ``$n`` group n
    (digits taken while the number stays a group); ``$n`` naming no group is
    kept as written, as Kafka does, when the pattern has groups at all."""
    out: list[str] = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch == "\\" and i + 1 < len(template):
            out.append(template[i + 1])
            i += 2
            continue
        if ch == "$" and i + 1 < len(template) and template[i + 1].isdigit():
            number = int(template[i + 1])
            if number > groups:
                if groups == 0:
                    raise NoMatchingRule(f"the replacement {template!r} names group {number}")
                out.append("$")
                i += 1
                continue
            i += 2
            while i < len(template) and template[i].isdigit():
                longer = number * 10 + int(template[i])
                if longer > groups:
                    break
                number, i = longer, i + 1
            out.append(match.group(number) or "")
            continue
        if ch == "$" and template.startswith("${", i):
            end = template.find("}", i)
            if end < 0:
                raise NoMatchingRule(f"the replacement {template!r} has an unclosed group name")
            out.append(match.group(template[i + 2 : end]) or "")
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class SslPrincipalMapper:
    """The parsed rules of one ``ssl.principal.mapping.rules`` value."""

    def __init__(self, rules: str) -> None:
        parsed = (_parse(text) for text in _split(rules))
        self._rules = tuple(rule for rule in parsed if rule is not None)

    def name(self, distinguished_name: str) -> str:
        """The principal's name for a certificate subject, or NoMatchingRule."""
        for rule in self._rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule(
            f"no ssl.principal.mapping.rules rule applies to {distinguished_name!r}"
        )

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self._rules)) + "]"


def _split(rules: str) -> list[str]:
    return [m.group(1) for m in re.finditer(_NEXT_RULE, rules.strip())]


def _parse(text: str) -> _Rule | None:
    """One rule; None for an empty one (skipped, as Kafka skips them)."""
    m = re.match(_RULE, text)
    assert m is not None  # the last alternative matches anything
    if m.end() != len(text):
        raise InvalidRules(f"invalid rule {text!r}: {text[m.end() :]!r} is left over")
    if m.group("default"):
        return _Rule(None)
    if m.group("pattern") is None:
        return None
    try:
        pattern = re.compile(re.sub(_JAVA_NAMED_GROUP, "(?P<", m.group("pattern")))
    except re.error as e:
        raise InvalidRules(f"invalid rule {text!r}: {e}") from None
    return _Rule(pattern, m.group("replacement"), m.group("case"), m.group("pattern"))
