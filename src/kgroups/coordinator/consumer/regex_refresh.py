"""A consumer group's regular expressions as records: each resolved again
when due (regex.py says when), and one no member subscribes to any longer
tombstoned."""

from __future__ import annotations

from kgroups.coordinator.consumer.group import ConsumerGroup
from kgroups.coordinator.consumer.records import (
    Emit,
    RegularExpressionKey,
    RegularExpressionValue,
)
from kgroups.coordinator.consumer.regex import regexes_due, resolve
from kgroups.coordinator.consumer.topics import TopicsView


def refresh_regexes(
    group: ConsumerGroup, topics: TopicsView, now_ms: int, refresh_interval_ms: int, emit: Emit
) -> bool:
    """Resolve the group's regexes again when due; whether a regex now
    resolves to other topics (the group epoch must move on)."""
    if not regexes_due(group, topics, now_ms, refresh_interval_ms):
        return False
    group.regexes_version_seen = topics.version
    changed = False
    for regex, matched in resolve(group.subscribed_regexes(), topics.names()).items():
        old = group.regexes.get(regex)
        changed |= old is None or old[0] != matched
        emit(
            RegularExpressionKey(group.group_id, regex),
            RegularExpressionValue(matched, topics.version, now_ms),
        )
    return changed


def drop_unused_regex(group: ConsumerGroup, regex: str, emit: Emit) -> None:
    if not group.regex_subscribers(regex) and regex in group.regexes:
        emit(RegularExpressionKey(group.group_id, regex), None)
