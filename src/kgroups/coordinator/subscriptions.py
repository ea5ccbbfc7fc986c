"""Which topics a consumer group subscribes to, read from its members' metadata.

OffsetDelete must refuse to drop offsets of topics the group still consumes.
For the "consumer" protocol the member metadata is the consumer protocol
subscription: an int16 version followed by a struct whose v0 layout prefixes
every later version, so reading it as v0 works for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from kio.schema.consumer_protocol_subscription.v0 import ConsumerProtocolSubscription

from kgroups.protocol.bounds import bounded_reader

CONSUMER_PROTOCOL_TYPE = "consumer"

_read_subscription = bounded_reader(ConsumerProtocolSubscription)


class UnreadableSubscription(ValueError):
    """Member metadata that is not a consumer protocol subscription."""


def subscribed_topics(metadata: bytes) -> frozenset[str]:
    if len(metadata) < 2:
        raise UnreadableSubscription("metadata too short for a version")
    try:
        subscription, _ = _read_subscription(metadata, 2)
    except Exception as e:  # the reader raises several kinds on malformed input
        raise UnreadableSubscription(str(e)) from e
    return frozenset(subscription.topics)


def union_of_subscriptions(metadatas: Iterable[bytes]) -> frozenset[str]:
    topics: set[str] = set()
    for metadata in metadatas:
        topics |= subscribed_topics(metadata)
    return frozenset(topics)
