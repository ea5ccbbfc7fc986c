"""Which topics a consumer's subscription names: names Kafka refuses are
reported at once, and a pattern subscription is matched against the topics
the metadata lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgroups.client.cluster import TopicInfo
from kgroups.client.exceptions import InvalidTopicError
from kgroups.client.subscription_state import SubscriptionState
from kgroups.errors import ErrorCode
from kgroups.topics.names import is_legal_topic_name

__all__ = ["raise_invalid_topics", "topics_matching_pattern"]

_INTERNAL_TOPIC_PREFIX = "__"


def raise_invalid_topics(topics: Iterable[str], known: Mapping[str, TopicInfo]) -> None:
    """Kafka's rules for names are checked here as well as by the brokers, which
    may answer INVALID_TOPIC_EXCEPTION: such a topic never gets partitions, and
    the consumer would otherwise wait for them in silence."""
    invalid = [
        t
        for t in topics
        if not is_legal_topic_name(t)
        or ((info := known.get(t)) is not None and info.error == ErrorCode.invalid_topic_exception)
    ]
    if invalid:
        raise InvalidTopicError(invalid)


def topics_matching_pattern(
    subs: SubscriptionState, known: Mapping[str, TopicInfo], exclude_internal: bool
) -> list[str]:
    """The known topics the subscribed pattern matches; internal ones only if
    ``exclude.internal.topics`` is off."""
    return [
        t
        for t, info in known.items()
        if subs.matches_subscribed_pattern(t)
        and not (exclude_internal and (info.internal or t.startswith(_INTERNAL_TOPIC_PREFIX)))
    ]
