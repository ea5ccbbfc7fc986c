"""Dynamic configs of groups, brokers and client metrics subscriptions in the
cluster store (``kgroups_configs``): every broker reads them at each turn, as
it reads the topics."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from kgroups.postgres_store.store import Cur, Store

__all__ = ["alter_configs", "read_configs"]

Resource = tuple[int, str]


def read_configs(store: Store) -> dict[Resource, dict[str, str]]:
    def work(cur: Cur) -> dict[Resource, dict[str, str]]:
        cur.execute("SELECT resource_type, resource_name, configs FROM kgroups_configs")
        return {(int(r[0]), r[1]): json.loads(r[2]) for r in cur.fetchall()}

    return store.transaction(work)


def alter_configs(
    store: Store,
    rtype: int,
    name: str,
    plan: Callable[[Mapping[str, str]], dict[str, str]],
) -> dict[str, str]:
    """Replace the resource's overrides by what ``plan`` makes of those stored,
    in one transaction (the row locked, so no concurrent change is lost); the
    overrides now."""

    def work(cur: Cur) -> dict[str, str]:
        cur.execute(
            "INSERT INTO kgroups_configs (resource_type, resource_name, configs)"
            " VALUES (%s, %s, '{}') ON CONFLICT DO NOTHING",
            (rtype, name),
        )
        cur.execute(
            "SELECT configs FROM kgroups_configs"
            " WHERE resource_type = %s AND resource_name = %s FOR UPDATE",
            (rtype, name),
        )
        row = cur.fetchone()
        assert row is not None
        wanted = plan(json.loads(row[0]))
        if wanted:
            cur.execute(
                "UPDATE kgroups_configs SET configs = %s"
                " WHERE resource_type = %s AND resource_name = %s",
                (json.dumps(wanted, sort_keys=True), rtype, name),
            )
        else:
            cur.execute(
                "DELETE FROM kgroups_configs WHERE resource_type = %s AND resource_name = %s",
                (rtype, name),
            )
        return wanted

    return store.transaction(work)
