"""The order in which the range and roundrobin assignors walk the members.

The Java client sorts members with group.instance.id (static members) first,
by that id, then the others by member id. Keeping static members in a stable
order is what lets a rolling restart, which hands out fresh member ids, leave
the assignment unchanged (KIP-345).

Java compares strings by UTF-16 code units; Python compares code points. The
two disagree only between characters above U+FFFF and those in
U+E000..U+FFFF, so names are compared by their UTF-16 encoding to agree with
Java always.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kgroups.assignors.protocol import Subscription

__all__ = ["java_string_key", "members_in_java_order", "subscribers_by_topic"]


def java_string_key(text: str) -> bytes:
    """A key that sorts strings as Java's String.compareTo does."""
    # Big-endian UTF-16 bytes compare like the code units they encode.
    return text.encode("utf-16-be", "surrogatepass")


def members_in_java_order(
    member_ids: Iterable[str], subscriptions: Mapping[str, Subscription]
) -> list[str]:
    def key(member_id: str) -> tuple[int, bytes, bytes]:
        instance_id = subscriptions[member_id].group_instance_id
        if instance_id is not None:
            return (0, java_string_key(instance_id), java_string_key(member_id))
        return (1, b"", java_string_key(member_id))

    return sorted(member_ids, key=key)


def subscribers_by_topic(
    members: Iterable[str], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[str]]:
    """Each subscribed topic's members, in the order of ``members``."""
    subscribers: dict[str, list[str]] = {}
    for member_id in members:
        for topic in dict.fromkeys(subscriptions[member_id].topics):
            subscribers.setdefault(topic, []).append(member_id)
    return subscribers
