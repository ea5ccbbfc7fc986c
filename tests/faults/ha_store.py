"""A local Patroni cluster as the fault run's HA store (FaultCluster's
``ha_store``): the URL of a database on it, and a failover that kills the
primary's PostgreSQL and returns once the standby takes writes."""

from __future__ import annotations

from kgroups.postgres_store.local_patroni import LocalPatroni


class PatroniStore:
    def __init__(self, store: LocalPatroni, database: str) -> None:
        self._store = store
        self.url = store.create_database(database)

    def failover(self) -> None:
        self._store.failover()
