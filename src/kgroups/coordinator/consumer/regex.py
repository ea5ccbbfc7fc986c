"""Regular-expression subscriptions, resolved against the topic names, and
when a group's regexes are due to be resolved again.

Kafka 4.x resolves a member's ``SubscribedTopicRegex`` on the broker with
RE2/J: RE2 syntax, and the pattern must match the whole topic name. RE2 here
gives the same syntax (no backreferences or lookarounds) and ``fullmatch``
the same anchoring. As in Kafka, every topic is a candidate, internal ones
included: only ACLs (which kgroups does not have) would filter them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

import re2

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.topics import TopicsView

REGEX_REFRESH_MIN_INTERVAL_MS = 10_000
"""Kafka's least time between two resolutions of a group's regexes."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the client's error, not the broker's

Matcher = Callable[[str], object]


class InvalidRegex(ValueError):
    pass


def compile_regex(regex: str) -> Matcher:
    """A function telling whether a topic name matches ``regex`` whole."""
    try:
        pattern = re2.compile(regex, _OPTIONS)
    except re2.error as e:
        reason = e.args[0] if e.args else "unknown error"
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        raise InvalidRegex(
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}."
        ) from None
    fullmatch: Matcher = pattern.fullmatch
    return fullmatch


def resolve(regexes: Iterable[str], names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The topics each regex matches, sorted (an invalid regex matches none)."""
    matchers: list[tuple[str, Matcher]] = []
    found: dict[str, list[str]] = {}
    for regex in regexes:
        found[regex] = []
        # Refused when a member brought it: only a foreign log holds one.
        with contextlib.suppress(InvalidRegex):
            matchers.append((regex, compile_regex(regex)))
    for name in names:
        for regex, matches in matchers:
            if matches(name) is not None:
                found[regex].append(name)
    return {regex: tuple(sorted(topics)) for regex, topics in found.items()}


def regexes_due(
    group: ConsumerGroup, topics: TopicsView, now_ms: int, refresh_interval_ms: int
) -> bool:
    """Whether the group's regexes are resolved again now: when one is new,
    the topics changed, or the last resolution is older than the refresh
    interval; at most once per Kafka's 10 s minimum interval."""
    last = group.regexes_refreshed_ms
    if last is None:
        return True
    if now_ms <= last + REGEX_REFRESH_MIN_INTERVAL_MS:
        return False
    return not (
        group.regexes_version_seen == topics.version
        and now_ms <= last + refresh_interval_ms
        and not group.has_unresolved_regex()
    )
