"""Share partitions rebuilt from their stored state, to be read (the metrics
endpoint), not served.

A share partition restored from ``__share_group_state`` stays in the
manager's ``stored`` until its first use takes it up, and the metrics
endpoint shows it meanwhile. Rebuilding it walks every state batch, which a
scrape every few seconds would pay again and again for state that does not
change; so each view is kept beside the stored value it was built from and
built again only when that value is another one (the state was stored
again) — a stored value is an immutable tuple, replaced, never changed in
place. A key taken up, or forgotten, leaves ``stored`` and its view goes at
the next call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeAlias, cast

# The share partitions' state machine is imported with the first view built:
# the manager, made with the broker, keeps these views from its start.
if TYPE_CHECKING:
    from kgroups.share_partitions.config import SharePartitionConfig
    from kgroups.share_partitions.partition import SharePartition
    from kgroups.share_partitions.state_records import StateBatch

StoredKey = tuple[str, uuid.UUID, int]
StoredState: TypeAlias = "tuple[int, tuple[StateBatch, ...]]"
"""(start offset, state batches), as the manager's ``stored`` holds them."""


class StoredViews:
    def __init__(self) -> None:
        self._views: dict[StoredKey, tuple[object, SharePartition]] = {}
        self.rebuilds = 0
        """Views built so far: what a scrape of unchanged state does not add to."""

    def views(
        self,
        stored: Mapping[StoredKey, object],
        config: SharePartitionConfig,
        unpack: Callable[[object], StoredState] | None = None,
    ) -> list[tuple[StoredKey, SharePartition]]:
        """A share partition for each key of ``stored``, built from its state
        only when that state is not the one the kept view was built from.
        A value is a ``StoredState``, or whatever ``unpack`` makes one of
        (an immutable record of the share coordinator, say)."""
        from kgroups.share_partitions.persisted import restored

        kept = self._views
        views: dict[StoredKey, tuple[object, SharePartition]] = {}
        for key, state in stored.items():
            view = kept.get(key)
            if view is None or view[0] is not state:
                start, batches = unpack(state) if unpack else cast("StoredState", state)
                view = (state, restored(config, start, batches))
                self.rebuilds += 1
            views[key] = view
        self._views = views
        return [(key, sp) for key, (_state, sp) in views.items()]
