"""Producer id blocks of a cluster: one counter row in the store, so that no
two brokers ever hand out the same id."""

from __future__ import annotations

from kgroups.postgres_store.store import Cur, Store

__all__ = ["allocate_producer_ids"]


def allocate_producer_ids(store: Store, count: int) -> int:
    """Take the next ``count`` producer ids of the cluster; returns the first."""

    def work(cur: Cur) -> int:
        cur.execute(
            "UPDATE kgroups_counters SET next_value = next_value + %s"
            " WHERE name = 'producer_id' RETURNING next_value - %s",
            (count, count),
        )
        row = cur.fetchone()
        assert row is not None
        return int(row[0])

    return store.transaction(work)
