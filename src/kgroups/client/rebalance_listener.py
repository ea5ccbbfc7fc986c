"""The user's hooks into a rebalance (the Java client's ConsumerRebalanceListener).

- ``on_partitions_revoked``: partitions are being taken away while the member is
  still in the group -- commit what was processed, flush state. Under the EAGER
  protocol it is called (maybe with no partitions) before every rejoin; under
  COOPERATIVE only when some partitions actually move, after the assignment
  that moves them.
- ``on_partitions_assigned``: partitions newly given to this member, after every
  rebalance (maybe with none).
- ``on_partitions_lost``: the membership is already gone (session expired,
  fenced generation): another member may own the partitions now, so committing
  is pointless. Defaults to ``on_partitions_revoked``, as in Java.

Any object with some of these methods will do; they receive a sorted list of
TopicPartition and may be coroutine functions when used with AsyncConsumer.
An exception from a hook does not stop the rebalance: it is raised from poll()
once the rebalance step is complete.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import Any

from kgroups.client.consumer_record import TopicPartition

__all__ = ["RebalanceListener", "invoke_listener"]

log = logging.getLogger(__name__)


class RebalanceListener:
    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> Any:
        return self.on_partitions_revoked(partitions)


async def invoke_listener(
    listener: Any, hook: str, partitions: Iterable[TopicPartition]
) -> Exception | None:
    """Call one hook; returns the exception it raised instead of raising it."""
    if listener is None:
        return None
    method = getattr(listener, hook, None)
    if method is None and hook == "on_partitions_lost":
        method = getattr(listener, "on_partitions_revoked", None)
    if method is None:
        return None
    try:
        result = method(sorted(partitions))
        if inspect.isawaitable(result):
            await result
    except Exception as e:
        log.error("rebalance listener %s failed", hook, exc_info=True)
        return e
    return None
